import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite

/// The workloads Latchkey is compared on with its peers (okta-mobile-swift's AuthFoundation),
/// written as the peer's harness writes them (Benchmarks/README.md, "Side by side"): against a
/// development provider whose tokens live an hour, `--issuer URL` to share one with a peer's
/// run (`latchkey dev-server --config`), else one of its own in this process.
///
/// - `peers.refresh.wait100.*`: 100 callers at once on a token they all want refreshed
///   (`accessToken(validFor:)` longer than the token lives, as the peer's
///   `refreshIfNeeded(graceInterval:)`): one refresh per round, the round's wall time.
/// - `peers.revoke_all.x50.*`: a sign-in (not timed), then `revoke(.all)`, fifty times: the
///   total, in memory and in SQLite.
///
/// Latency is added at the provider by the caller of a shared one (its admin API), or here for
/// one of its own: `--latency MS`.
@MainActor
func peerFigures(issuer: URL?, latency: Int) async throws {
    var own: DevProvider?
    if issuer == nil {
        var configuration = DevProviderConfiguration.default
        configuration.accessTokenLifetime = 3_600
        configuration.idTokenLifetime = 3_600
        own = try await DevProvider.start(configuration: configuration)
        if latency > 0 { own?.faults.set(.latency(milliseconds: latency), for: .token) }
        if latency > 0 { own?.faults.set(.latency(milliseconds: latency), for: .revocation) }
    }
    guard let issuer = issuer ?? own?.issuer else { return }
    let provider = OpenIDProvider(
        configuration: OpenIDProviderConfiguration(
            issuer: issuer, clientID: "latchkey-cli", scopes: ["openid", "profile", "email", "offline_access"],
            allowsPasswordGrant: true),
        transport: transport)
    let rounds = quick ? 5 : 30
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    for (name, store) in [
        ("memory", CredentialStore.inMemory()),
        ("sqlite", try await CredentialStore.sqlite(at: folder.appendingPathComponent("credentials.sqlite").path)),
    ] {
        await store.register(provider)
        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: store)
        let walls = try await refreshWaits(credential, rounds: rounds)
        record("peers.refresh.wait100.\(name).latency\(latency).median", percentile(walls, 0.5), "ms")
    }
    for (name, store) in [
        ("memory", CredentialStore.inMemory()),
        ("sqlite", try await CredentialStore.sqlite(at: folder.appendingPathComponent("revoke.sqlite").path)),
    ] {
        await store.register(provider)
        var total = 0.0
        for _ in 0..<50 {
            let credential = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: store)
            let start = ContinuousClock.now
            _ = await credential.revoke(.all)
            total += milliseconds(ContinuousClock.now - start)
        }
        record("peers.revoke_all.x50.\(name).latency\(latency)", total, "ms")
    }
    await own?.stop()
}

/// Each round's wall time, 100 callers at once asking for a token that lasts longer than the
/// provider's live: one refresh, which they all wait for.
nonisolated func refreshWaits(_ credential: Credential, rounds: Int) async throws -> [Double] {
    var walls: [Double] = []
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { _ = try await credential.accessToken(validFor: 7_200) } }
            try await group.waitForAll()
        }
        walls.append(milliseconds(ContinuousClock.now - start))
    }
    return walls
}
