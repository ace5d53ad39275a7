import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeySQLite

/// What DPoP costs: one proof (ES256 signing with swift-crypto), and a userinfo request with and
/// without DPoP against the development provider at 0 ms added latency, in alternating rounds so
/// that the machine's drift falls on both alike, with the account in memory and in SQLite (where
/// nonces are shared through the store).
@MainActor
func dpopFigures() async throws {
    let key = DPoPKey()
    guard let url = URL(string: "https://api.example.com/v1/items?page=2") else { return }
    var costs: [Double] = []
    for _ in 0..<(quick ? 1_000 : 10_000) {
        let start = ContinuousClock.now
        _ = try DPoPProof(method: "GET", url: url, issuedAt: Date(), accessToken: "an-access-token").signed(with: key)
        costs.append(milliseconds(ContinuousClock.now - start) * 1_000)
    }
    record("dpop.proof.median", percentile(costs, 0.5), "µs")
    record("dpop.proof.p99", percentile(costs, 0.99), "µs")

    let dev = try await DevProvider.start()
    defer { Task { await dev.stop() } }
    func signedIn(_ policy: DPoPPolicy, into store: CredentialStore) async throws -> Credential {
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", scopes: scopes, allowsPasswordGrant: true, dpop: policy),
            transport: transport)
        return try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    func sqliteStore(_ name: String) async throws -> CredentialStore {
        try await CredentialStore.sqlite(at: folder.appendingPathComponent(name).path)
    }
    let credentials = [
        try await signedIn(.never, into: .inMemory()), try await signedIn(.required, into: .inMemory()),
        try await signedIn(.never, into: try await sqliteStore("bearer.sqlite")),
        try await signedIn(.required, into: try await sqliteStore("bound.sqlite")),
    ]
    for credential in credentials { _ = try await credential.userInfo() }
    var times: [[Double]] = Array(repeating: [], count: credentials.count)
    for _ in 0..<(quick ? 50 : 500) {
        for (index, credential) in credentials.enumerated() {
            let start = ContinuousClock.now
            _ = try await credential.userInfo()
            times[index].append(milliseconds(ContinuousClock.now - start))
        }
    }
    let medians = times.map { percentile($0, 0.5) }
    record("dpop.userinfo.memory.bearer.median", medians[0], "ms")
    record("dpop.userinfo.memory.dpop.median", medians[1], "ms")
    record("dpop.userinfo.memory.ratio", medians[1] / medians[0], "x")
    record("dpop.userinfo.sqlite.bearer.median", medians[2], "ms")
    record("dpop.userinfo.sqlite.dpop.median", medians[3], "ms")
    record("dpop.userinfo.sqlite.ratio", medians[3] / medians[2], "x")
}
