import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeySQLite

/// The token hot path: `accessToken()` on a valid token in a SQLite store, as a program that
/// asks for it before every request does. Each call reads the store's change counter; the
/// credential's seal is opened only when the store changed.
@MainActor
func hotPathFigures() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let store = try await CredentialStore.sqlite(at: folder.appendingPathComponent("credentials.sqlite").path)
    guard let issuer = URL(string: "https://issuer.example") else { return }
    let identity = ProviderIdentity(issuer: issuer.absoluteString, clientID: "bench")
    let token = Token(
        accessToken: "at-hot", refreshToken: "rt-hot", issuedAt: Date(), expiresAt: Date().addingTimeInterval(86_400),
        provider: identity)
    let id = try await store.add(token).id
    // Never asked: the token is valid for a day.
    let provider = OpenIDProvider(
        configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: "bench"), transport: transport)
    let credential = await store.credential(id, provider: provider)
    let costs = try await accessTokenCosts(credential, calls: quick ? 10_000 : 100_000)
    record("access_token.valid.sqlite.median", percentile(costs, 0.5), "µs")
    record("access_token.valid.sqlite.p99", percentile(costs, 0.99), "µs")
}

/// What each of `calls` calls of `accessToken()` costs, in µs, called from a task of the
/// cooperative pool as a program's request handlers call it (not from the main actor, where
/// every call would also pay two thread switches).
nonisolated func accessTokenCosts(_ credential: Credential, calls: Int) async throws -> [Double] {
    var costs: [Double] = []
    costs.reserveCapacity(calls)
    for _ in 0..<calls {
        let start = ContinuousClock.now
        _ = try await credential.accessToken()
        costs.append(milliseconds(ContinuousClock.now - start) * 1_000)
    }
    return costs
}
