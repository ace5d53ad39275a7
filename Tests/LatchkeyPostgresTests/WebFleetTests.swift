import Crypto
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeyTestSupport
import Testing

/// The example web app as two instances (separate processes, `latchkey-web-example`) on one
/// PostgreSQL store, against the development provider, whose back-channel logouts reach
/// instance B only.
@Suite("A web app's fleet: back-channel logout reaches every instance", .enabled(if: PostgresServer.isEnabled))
struct WebFleetTests {
    struct Fleet {
        let provider: DevProvider?
        let a: URL
        let b: URL
        let instances: [ChildProcess]
        let url: String
        let key: SymmetricKey

        /// Two instances against a development provider in this process, whose client "web-app"
        /// sends its back-channel logouts to the second.
        static func start(via route: PostgresServer.Route = .direct) async throws -> Fleet {
            let (portA, portB) = (try await FreePort.pick(), try await FreePort.pick())
            var configuration = DevProviderConfiguration.default
            configuration.clients.append(
                .init(
                    clientID: "web-app", clientSecret: "web-app-secret",
                    redirectURIs: ["http://127.0.0.1:\(portA)/callback", "http://127.0.0.1:\(portB)/callback"],
                    postLogoutRedirectURIs: [], backchannelLogoutURI: "http://127.0.0.1:\(portB)/backchannel-logout"))
            let provider = try await DevProvider.start(
                configuration: configuration, signingKeys: try await SharedSigningKeys.get())
            return try await start(
                issuer: provider.issuer, clientID: "web-app", secret: "web-app-secret", ports: (portA, portB),
                provider: provider, route: route)
        }

        /// Two instances on `ports` of a fresh store, signing users in at `issuer`.
        static func start(
            issuer: URL, clientID: String, secret: String, ports: (Int, Int), provider: DevProvider? = nil,
            route: PostgresServer.Route = .direct
        ) async throws -> Fleet {
            let url = try await PostgresServer.freshDatabase(via: route)
            let key = SymmetricKey(size: .bits256)
            let hex = key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
            var instances: [ChildProcess] = []
            for port in [ports.0, ports.1] {
                let instance = try await ChildProcess.start(
                    Executables.url("latchkey-web-example"),
                    [
                        "--issuer", issuer.absoluteString, "--client-id", clientID, "--client-secret", secret,
                        "--port", "\(port)", "--postgres", url, "--key-hex", hex,
                        // A refresh token for the sessions, asked as OpenID Connect Core §11 says:
                        // the example then sends prompt=consent, which the providers require.
                        "--scope", "openid profile email offline_access",
                    ])
                instances.append(instance)
                let said = try await instance.standardOutput(until: { $0.contains("listening on") })
                guard said.contains("listening on") else {
                    for started in instances { started.send(signal: SIGKILL) }
                    let result = try await instance.finish()
                    for started in instances { _ = try? await started.finish() }
                    await provider?.stop()
                    throw StartFailure(port: port, stderr: result.stderr)
                }
            }
            return Fleet(
                provider: provider, a: try #require(URL(string: "http://127.0.0.1:\(ports.0)")),
                b: try #require(URL(string: "http://127.0.0.1:\(ports.1)")), instances: instances, url: url, key: key)
        }

        /// An instance ended before it listened.
        struct StartFailure: Error, CustomStringConvertible {
            let port: Int
            let stderr: String
            var description: String { "the instance on port \(port) ended before it listened: \(stderr)" }
        }

        /// The refresh token of the only credential in the store.
        func onlyRefreshToken() async throws -> String {
            try await PostgresServer.withStore(key: key, url: url) { store, _, _ in
                try #require(try await store.all().first?.token.refreshToken)
            }
        }

        func stop() async {
            for instance in instances { instance.send(signal: SIGTERM) }
            for instance in instances { _ = try? await instance.finish() }
            await provider?.stop()
        }

        /// Signs `username` in on `instance` in a fresh browser (a provider session of its own).
        func signIn(_ username: String, on instance: URL) async throws -> TestBrowser {
            let browser = TestBrowser()
            let form = try await browser.open(instance.appendingPathComponent("login"))
            let home = try await browser.signInAtDevProvider(form, username: username, password: "\(username)-password")
            #expect(home.body.contains("Signed in as"))
            return browser
        }
    }

    static func withFleet(
        _ start: () async throws -> Fleet = { try await Fleet.start() }, _ body: (Fleet) async throws -> Void
    )
        async throws
    {
        let fleet = try await start()
        do {
            try await body(fleet)
        } catch {
            await fleet.stop()
            throw error
        }
        await fleet.stop()
    }

    /// Whether the provider's introspection says `token` (a refresh token) is active.
    static func isActive(_ token: String, at issuer: URL, clientID: String, secret: String) async throws -> Bool {
        let client = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuer, clientID: clientID, authentication: .basic(secret: secret)),
            transport: AsyncHTTPClientTransport.shared)
        return try await client.introspect(token, kind: .refreshToken).active
    }

    @Test(
        "a session ended at the provider is signed out on A after its logout token reached B",
        arguments: PostgresServer.Route.allCases)
    func logoutReachesEveryInstance(_ route: PostgresServer.Route) async throws {
        try await Self.withFleet({ try await Fleet.start(via: route) }) { fleet in
            let browser = try await fleet.signIn("alice", on: fleet.a)
            #expect(try await browser.open(fleet.a.appendingPathComponent("protected")).body.contains("you are alice"))
            let refreshToken = try await fleet.onlyRefreshToken()
            let provider = try #require(fleet.provider)
            provider.backChannel.fault = .replay
            #expect(await provider.endSessions(of: "alice") == 1)
            let deliveries = provider.backChannel.deliveries
            #expect(deliveries.map(\.uri).allSatisfy { $0.hasPrefix(fleet.b.absoluteString) })
            #expect(deliveries.map(\.status) == [200, 400], "the replay is refused")
            // A reads the session at every request: signed out at once, well within a second.
            #expect(try await browser.open(fleet.a).body.contains("Signed out."))
            #expect(
                !(try await Self.isActive(
                    refreshToken, at: provider.issuer, clientID: "web-app", secret: "web-app-secret")))
        }
    }

    @Test("100 logout tokens at once, half to each instance, end exactly their 100 sessions")
    func hundredAtOnce() async throws {
        try await Self.withFleet { fleet in
            let provider = try #require(fleet.provider)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        _ = try await fleet.signIn("alice", on: index.isMultiple(of: 2) ? fleet.a : fleet.b)
                    }
                    if index >= 4 { try await group.next() }  // four sign-ins at a time
                }
                for _ in 0..<5 { group.addTask { _ = try await fleet.signIn("bob", on: fleet.a) } }
                try await group.waitForAll()
            }
            try await PostgresServer.withStore(key: fleet.key, url: fleet.url) { store, storage, _ in
                let issuer = provider.issuer.absoluteString
                let alices = try await storage.webSessions(issuer: issuer, providerSessionID: nil, subject: nil)
                    .filter { $0.subject != nil }
                #expect(alices.count == 105)
                let bobSubject = try #require(
                    try await store.all().first { $0.metadata.name?.contains("Bob") == true }?.metadata.subject)
                let targets = alices.filter { $0.subject != bobSubject }
                #expect(targets.count == 100)
                var tokens: [String] = []
                for session in targets {
                    tokens.append(
                        try await provider.makeLogoutToken(
                            clientID: "web-app", subject: nil, sid: session.providerSessionID))
                }
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for (index, token) in tokens.enumerated() {
                        let instance = index.isMultiple(of: 2) ? fleet.a : fleet.b
                        group.addTask {
                            try await TestBrowser().submit(
                                instance.appendingPathComponent("backchannel-logout"), ["logout_token": token]
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses.count == 100 && statuses.allSatisfy { $0 == 200 })
                let left = try await storage.webSessions(issuer: issuer, providerSessionID: nil, subject: nil)
                #expect(left.count == 5 && left.allSatisfy { $0.subject == bobSubject })
                #expect(try await store.all().count == 5, "the ended sessions' credentials are gone")
            }
        }
    }
}
