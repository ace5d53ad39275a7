import Foundation
import Hummingbird
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyHummingbird
import LatchkeyTestSupport
import ServiceLifecycle
import Testing

/// A web app of the tests, in this process: the sign-in routes, the session middleware, a
/// home page naming the user and a protected page calling userinfo with the user's token.
struct WebApp {
    let base: URL
    let sessions: WebSessions
    let signOuts: SignOutRecorder
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    actor SignOutRecorder {
        var results: [WebSignOutResult] = []
        func record(_ result: WebSignOutResult) { results.append(result) }
    }

    /// The client a provider registers for an app on `port`.
    static func client(port: Int, backchannelPort: Int? = nil, sessionRequired: Bool? = nil)
        -> DevProviderConfiguration.Client
    {
        DevProviderConfiguration.Client(
            clientID: "web-app", clientSecret: "web-app-secret",
            redirectURIs: ["http://127.0.0.1:\(port)/callback"], postLogoutRedirectURIs: ["http://127.0.0.1:\(port)/"],
            backchannelLogoutURI: "http://127.0.0.1:\(backchannelPort ?? port)/backchannel-logout",
            backchannelLogoutSessionRequired: sessionRequired)
    }

    static func start(
        port: Int, issuer: URL, store: CredentialStore = .inMemory(), clientID: String = "web-app",
        secret: String = "web-app-secret", policy: WebSessionPolicy = WebSessionPolicy(), publicBase: URL? = nil,
        sweepEvery interval: Duration? = nil,
        authorization: AuthorizationParameters = AuthorizationParameters(
            scopes: ["openid", "profile", "email", "offline_access"])
    ) async throws -> WebApp {
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuer, clientID: clientID, authentication: .basic(secret: secret)),
            transport: AsyncHTTPClientTransport.shared, clock: store.clock)
        let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
        // The URL the app is known by (an https one behind a proxy, say); itself by default.
        let known = publicBase ?? base
        let sessions = try WebSessions(
            store: store, provider: provider, redirectURI: known.appendingPathComponent("callback"),
            postLogoutRedirectURI: known.appendingPathComponent(""), policy: policy, authorization: authorization)
        let recorder = SignOutRecorder()
        let router = Router(context: LatchkeyWebContext.self)
        router.add(middleware: WebSessionMiddleware(sessions: sessions))
        WebSignInRoutes<LatchkeyWebContext>(sessions: sessions, onSignOut: { await recorder.record($0) })
            .register(on: router)
        router.get("/") { _, context in
            context.webSession.map { "Signed in as \($0.subject ?? "?") csrf=\(context.csrfToken ?? "")" }
                ?? "Signed out"
        }
        router.group("protected").add(middleware: RequireSignIn<LatchkeyWebContext>()).get { _, context in
            let claims = try await context.credential?.userInfo() ?? [:]
            return "API: \(claims["preferred_username"]?.stringValue ?? "?")"
        }
        let (running, continuation) = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { _ in continuation.finish() })
        let sweeper = interval.map { WebSessionSweeper(sessions: sessions, interval: $0) }
        let services: [any Service] = [app] + (sweeper.map { [$0] } ?? [])
        let group = ServiceGroup(configuration: .init(services: services, logger: app.logger))
        let task = Task { try await group.run() }
        for await _ in running {}
        return WebApp(base: base, sessions: sessions, signOuts: recorder, task: task, group: group)
    }

    func url(_ path: String) -> URL { base.appendingPathComponent(path) }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
