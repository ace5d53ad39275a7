import Crypto
import Foundation
import Latchkey
import LatchkeyPostgres

/// `accessToken()`'s hot path on a PostgreSQL store: a valid token from memory (the read cache,
/// kept while the change log says nothing changed) and from the server (a round trip and an
/// AES-GCM open), and how long instance B keeps handing out a token after instance A removed
/// its credential (the cache's staleness; bound: 1 s).
func postgresHotPathFigures(database: String, key: SymmetricKey, label: String) async throws {
    try await withInstances(2, database, key: key) { stores in
        let (a, b) = (stores[0], stores[1])
        guard let storage = b.storage as? PostgresCredentialStorage else { return }
        func add() async throws -> CredentialID {
            try await a.add(
                Token(
                    accessToken: "access-\(UUID())", refreshToken: "refresh-\(UUID())", issuedAt: Date(),
                    expiresAt: Date().addingTimeInterval(3_600),
                    provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "bench"))
            ).id
        }
        func cachedOnB(_ id: CredentialID) async throws {
            _ = try await storage.validAccessToken(for: id, minimumValidity: 60, at: Date())
            while !storage.servesFromMemory { try await Task.sleep(for: .milliseconds(5)) }
            _ = try await storage.validAccessToken(for: id, minimumValidity: 60, at: Date())
        }

        let id = try await add()
        try await cachedOnB(id)
        let calls = quick ? 20_000 : 200_000
        let cached = try await time {
            for _ in 0..<calls { _ = try await storage.validAccessToken(for: id, minimumValidity: 60, at: Date()) }
        }
        await record("\(label).access_token.cached", cached * 1_000 / Double(calls), "µs")
        let reads = quick ? 200 : 2_000
        let uncached = try await time {
            for _ in 0..<reads {
                _ = try await storage.credential(for: id)?.accessToken(minimumValidity: 60, at: Date())
            }
        }
        await record("\(label).access_token.uncached", uncached * 1_000 / Double(reads), "µs")

        var delays: [Double] = []
        for _ in 0..<(quick ? 20 : 100) {
            let id = try await add()
            try await cachedOnB(id)
            _ = try await a.remove(id)
            let removed = ContinuousClock.now
            while try await storage.validAccessToken(for: id, minimumValidity: 60, at: Date()) != nil {
                try await Task.sleep(for: .milliseconds(1))
            }
            delays.append(milliseconds(ContinuousClock.now - removed))
        }
        await record("\(label).access_token.invalidation.median", percentile(delays, 0.5), "ms")
        await record("\(label).access_token.invalidation.p99", percentile(delays, 0.99), "ms")
    }
}
