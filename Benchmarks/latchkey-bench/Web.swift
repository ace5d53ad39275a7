import Crypto
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyPostgres

/// Back-channel logout: logout tokens verified per second on one instance (the signature, the
/// claims, and the whole logout with its `jti` recorded in memory), and, on PostgreSQL, the time
/// from a logout carried out by instance B until instance A refuses the session (instances are
/// stores with clients of their own in this process; no HTTP).
@MainActor
func webFigures(postgres url: String?) async throws {
    var configuration = DevProviderConfiguration.default
    configuration.clients.append(
        .init(
            clientID: "web-app", clientSecret: "web-app-secret", redirectURIs: ["http://127.0.0.1/callback"],
            postLogoutRedirectURIs: []))
    let dev = try await DevProvider.start(configuration: configuration)
    defer { Task { await dev.stop() } }
    let issuer = dev.issuer
    let provider: @Sendable () -> OpenIDProvider = {
        OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuer, clientID: "web-app", authentication: .basic(secret: "web-app-secret")),
            transport: AsyncHTTPClientTransport.shared)
    }
    let count = quick ? 300 : 3_000
    var tokens: [String] = []
    for index in 0..<count {
        tokens.append(try await dev.makeLogoutToken(clientID: "web-app", subject: nil, sid: "s\(index)"))
    }
    let verifier = provider()
    _ = try await verifier.verifyLogoutToken(tokens[0])
    var start = ContinuousClock.now
    for token in tokens { _ = try await verifier.verifyLogoutToken(token) }
    let verifying = milliseconds(ContinuousClock.now - start)
    record("web.logout_token.verify.per_second", Double(count) / verifying * 1_000, "tokens/s")
    let sessions = try WebSessions(
        store: .inMemory(), provider: provider(), redirectURI: try URL(string: "http://127.0.0.1/callback").unwrap())
    start = ContinuousClock.now
    for token in tokens { _ = try await sessions.backChannelLogout(token) }
    let logouts = milliseconds(ContinuousClock.now - start)
    record("web.logout_token.logout.memory.per_second", Double(count) / logouts * 1_000, "tokens/s")

    guard let url else { return }
    let name = "latchkey_bench_web_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
    try await createDatabase(name, at: url)
    defer { Task { try? await dropDatabase(name, at: url) } }
    var components = URLComponents(string: url)
    components?.path = "/\(name)"
    let database = try (components?.string).unwrap()
    let key = SymmetricKey(size: .bits256)
    let rounds = quick ? 30 : 200
    let latencies = try await withInstances(2, database, key: key) { stores in
        let a = try WebSessions(
            store: stores[0], provider: provider(), redirectURI: try URL(string: "http://127.0.0.1/callback").unwrap())
        let b = try WebSessions(
            store: stores[1], provider: provider(), redirectURI: try URL(string: "http://127.0.0.1/callback").unwrap())
        let storage = try (stores[0].storage as? any WebSessionStorage).unwrap()
        var latencies: [Double] = []
        for round in 0..<rounds {
            let cookie = UUID().uuidString
            let handle = SHA256.hash(data: Data(cookie.utf8)).map { String(format: "%02x", $0) }.joined()
            let stored = try await stores[0].add(
                Token(
                    accessToken: "access-\(round)", refreshToken: "refresh-\(round)", issuedAt: Date(),
                    expiresAt: Date().addingTimeInterval(3_600),
                    provider: ProviderIdentity(issuer: dev.issuer.absoluteString, clientID: "web-app")),
                accountClaims: ["sub": .string("alice")])
            let now = Date()
            try await storage.insertWebSession(
                WebSession(
                    handle: handle, credentialID: stored.id, issuer: dev.issuer.absoluteString, subject: "alice",
                    providerSessionID: "sid-\(round)", createdAt: now, lastSeenAt: now,
                    expiresAt: now.addingTimeInterval(3_600)))
            let token = try await dev.makeLogoutToken(clientID: "web-app", subject: nil, sid: "sid-\(round)")
            _ = try await a.session(cookie: cookie).unwrap()
            // A polls while B carries the logout out (B also revokes the tokens, after).
            let start = ContinuousClock.now
            let logout = Task { try await b.backChannelLogout(token) }
            while try await a.session(cookie: cookie) != nil {}
            latencies.append(milliseconds(ContinuousClock.now - start))
            _ = try await logout.value
        }
        return latencies
    }
    record("web.logout.b_to_a_refused.postgres.median", percentile(latencies, 0.5), "ms")
    record("web.logout.b_to_a_refused.postgres.p99", percentile(latencies, 0.99), "ms")
}

struct Missing: Error {}

extension Optional {
    func unwrap() throws -> Wrapped {
        guard let self else { throw Missing() }
        return self
    }
}
