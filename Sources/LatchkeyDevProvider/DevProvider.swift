public import Foundation
import Hummingbird
public import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// A small OpenID provider for demos, tests and app developers' tests, with fault injection.
///
/// It follows the RFCs closely (so a client is never tuned to a lenient server) but is not a
/// production identity provider: everything lives in memory.
///
/// ```swift
/// let provider = try await DevProvider.start()          // 127.0.0.1, an ephemeral port
/// print(provider.issuer)                                // http://127.0.0.1:PORT
/// provider.faults.set(.status(503, retryAfter: 1), for: .revocation)
/// provider.faults.isOffline = true
/// #expect(provider.faults.count("token.refresh_token") == 1)
/// await provider.stop()
/// ```
public final class DevProvider: Sendable {
    /// The issuer identifier, e.g. `http://127.0.0.1:53412`.
    public let issuer: URL
    /// Fault injection and request counters.
    public let faults: DevProviderFaults
    /// The users and clients it serves.
    public let configuration: DevProviderConfiguration
    /// The token the `/admin` endpoints require, as `Authorization: Bearer TOKEN`: random per run
    /// unless one was given.
    public let adminToken: String
    /// The name of the Ping journey sessions' header, as `serverinfo` gives it: random per run
    /// unless the configuration names one.
    public let sessionCookieName: String
    private let state: ProviderState
    private let journeys: JourneyState
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(
        issuer: URL, faults: DevProviderFaults, configuration: DevProviderConfiguration, adminToken: String,
        journeys: JourneyState, state: ProviderState, group: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.issuer = issuer
        self.adminToken = adminToken
        self.sessionCookieName = journeys.cookieName
        self.journeys = journeys
        self.faults = faults
        self.configuration = configuration
        self.state = state
        self.group = group
        self.task = task
    }

    /// Starts a provider in this process and returns once it accepts connections.
    ///
    /// - Parameters:
    ///   - configuration: users, clients and lifetimes; ``DevProviderConfiguration/default`` by default.
    ///   - signingKeys: the first signing keys; new ones when nil. Tests that start many
    ///     providers save time by passing one set to all of them.
    ///   - host: the address to listen on (loopback by default). The default users' passwords are
    ///     published: listen elsewhere only on a network of your own.
    ///   - port: the port; 0 picks a free one.
    ///   - adminToken: the token the `/admin` endpoints require; a random one when nil.
    ///   - logger: where the server logs; silent by default.
    ///   - now: the provider's clock.
    public static func start(
        configuration: DevProviderConfiguration = .default,
        signingKeys: DevProviderSigningKeys? = nil,
        host: String = "127.0.0.1",
        port: Int = 0,
        adminToken: String? = nil,
        logger: Logger? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> DevProvider {
        let adminToken = adminToken ?? ProviderState.randomToken(bytes: 24)
        let logger = logger ?? Logger(label: "latchkey.dev-provider", factory: { _ in SwiftLogNoOpLogHandler() })
        let state = try await ProviderState(
            configuration: configuration, signingKeys: signingKeys ?? DevProviderSigningKeys.generate(), now: now)
        let faults = DevProviderFaults()
        let journeys = JourneyState(configuration: configuration, now: now)
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let application = buildApplication(
            state: state, journeys: journeys, faults: faults, configuration: configuration, adminToken: adminToken,
            host: host, port: port,
            logger: logger,
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            })
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { portContinuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let boundPort = await iterator.next(), boundPort > 0 else {
            task.cancel()
            _ = try await task.value
            throw DevProviderError(description: "The development provider could not listen on \(host):\(port).")
        }
        let urlHost = host.contains(":") ? "[\(host)]" : host
        guard let issuer = URL(string: "http://\(urlHost):\(boundPort)") else {
            throw DevProviderError(description: "The development provider's issuer URL is not valid.")
        }
        await state.setIssuer(issuer.absoluteString)
        return DevProvider(
            issuer: issuer, faults: faults, configuration: configuration, adminToken: adminToken,
            journeys: journeys, state: state, group: group, task: task)
    }

    /// Serves until the process receives SIGINT or SIGTERM, calling `onStart` with the provider
    /// once connections are accepted. For the `latchkey dev-server` command.
    public static func serve(
        configuration: DevProviderConfiguration = .default,
        host: String = "127.0.0.1",
        port: Int = 0,
        adminToken: String? = nil,
        logger: Logger? = nil,
        onStart: @escaping @Sendable (DevProvider) async -> Void
    ) async throws {
        // Trapped before anything is announced: a signal sent the moment `onStart` says the
        // server is up waits in the sequence and stops it, where the default action would have
        // killed the process.
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let provider = try await start(
            configuration: configuration, host: host, port: port, adminToken: adminToken, logger: logger)
        await onStart(provider)
        for await _ in signals { break }
        await provider.stop()
    }

    private var logger: Logger { Logger(label: "latchkey.dev-provider", factory: { _ in SwiftLogNoOpLogHandler() }) }

    /// Stops accepting connections and waits for the server to finish.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// The back-channel logouts the provider sends: their shape, a fault, and every delivery.
    public var backChannel: DevProviderBackChannel { faults.backChannel }

    /// Ends every session of `username`, as an administrator would: its grants are revoked and
    /// each client with a back-channel logout URI is sent a logout token before this returns.
    /// - Returns: how many sessions ended.
    @discardableResult
    public func endSessions(of username: String) async -> Int {
        await Endpoints(state: state, journeys: journeys, faults: faults, configuration: configuration)
            .endSessions(of: username)
    }

    /// A logout token as the provider sends it, signed with its current key, for a test to
    /// POST to a receiver itself: for `clientID`, naming `subject` and `sid` (either may be
    /// `nil`), in `shape`, with `fault` applied.
    public func makeLogoutToken(
        clientID: String, subject: String?, sid: String?, shape: DevProviderLogoutTokenShape = .standard,
        fault: DevProviderLogoutTokenFault? = nil
    ) async throws -> String {
        try await DevProviderBackChannel.token(
            issuer: issuer.absoluteString, clientID: clientID, subject: subject, sid: sid, shape: shape, fault: fault,
            keys: state.keys, now: await state.currentDate)
    }

    /// Puts a new RS256 and ES256 key pair in use. The previous keys stay in the JWKS for the
    /// configured grace period, so tokens they signed still verify.
    public func rotateKeys() async throws {
        try await state.keys.rotate(now: await state.currentDate)
    }

    /// Sets the lifetime of the access tokens issued from now on, in seconds: a test signs in
    /// with tokens that expire at once, then lets the refresh bring long-lived ones.
    public func setAccessTokenLifetime(_ seconds: Int) async {
        await state.setAccessTokenLifetime(seconds)
    }

    /// Issues `count` refresh tokens of `username` to `clientID` at once, each in a grant and a
    /// session of its own, without the HTTP round trips or signatures of a sign-in: for tests
    /// that need thousands of live tokens (a revocation outbox draining, say).
    ///
    /// - Throws: ``DevProviderError`` when the user or the client is not in the configuration.
    public func mintRefreshTokens(
        count: Int, username: String = "alice", clientID: String = "latchkey-cli",
        scopes: [String] = ["openid", "offline_access"]
    ) async throws -> [String] {
        do {
            return try await state.mintRefreshTokens(
                count: count, username: username, clientID: clientID, scopes: scopes)
        } catch {
            throw DevProviderError(description: "There is no user \(username) or no client \(clientID).")
        }
    }

    /// Whether `token` (access or refresh token, or device secret) is active, as introspection
    /// would answer, asked in-process.
    public func isActive(_ token: String) async -> Bool {
        await state.introspect(token)["active"] == .bool(true)
    }

    /// Requires a nonce in every DPoP proof from now on (RFC 9449 §8), a new one after
    /// `rotation` accepted proofs; `nil` stops requiring one.
    public func requireDPoPNonces(rotatingAfter rotation: Int?) async {
        await state.requireDPoPNonces(rotatingAfter: rotation)
    }

    /// Answers the next `count` DPoP proofs with `use_dpop_nonce` and a new nonce, as if the
    /// nonce had just changed under them (nonces must be required).
    public func forceDPoPNonceChallenges(_ count: Int) async {
        await state.forceDPoPNonceChallenges(count)
    }

    /// Sets the lifetime of the ID tokens issued from now on, in seconds: a test signs in with an
    /// ID token about to expire, then lets the refresh bring a long-lived one.
    public func setIDTokenLifetime(_ seconds: Int) async {
        await state.setIDTokenLifetime(seconds)
    }

    /// Publishes `entries` (each a JWK object as JSON text) in the JWKS after the provider's own
    /// keys: keys a client cannot use (`{"kty":"oct","k":"…"}`, an EC key on `secp256k1`), for
    /// tests of a client's key set handling. An empty list publishes the provider's keys alone.
    public func setExtraKeySetEntries(_ entries: [String]) async {
        await state.setExtraKeySetEntries(entries)
    }

    /// How many grants of `username` are live (not revoked): what a test of a sign-in that must
    /// end a grant checks on the server's side.
    public func liveGrants(of username: String) async -> Int {
        await state.liveGrants(of: username)
    }

    /// How many journey sessions of `username` are live: what a test of a sign-out checks on
    /// the server's side.
    public func liveJourneySessions(of username: String) async -> Int {
        await journeys.liveSessions(of: username)
    }

    /// The URL of one of the provider's endpoints (the journey ones in the configured realm).
    public func url(_ endpoint: DevProviderEndpoint) -> URL {
        let url = issuer.appendingPathComponent(String(endpoint.path(realm: configuration.realm).dropFirst()))
        guard let query = endpoint.query, var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url }
        components.percentEncodedQuery = query
        return components.url ?? url
    }

    /// The OAuth issuer of the Ping realm: `ISSUER/oauth2/realms/root/realms/REALM`. Its tokens
    /// come from the same users and clients as the root issuer's, and name this issuer.
    public var realmIssuer: URL {
        issuer.appendingPathComponent(String(configuration.realmIssuerPath.dropFirst()))
    }

    /// The discovery key of the global sign-out endpoint: `latchkey_global_signout_endpoint`.
    public static let globalSignOutDiscoveryKey = Endpoints.globalSignOutKey
}

/// The provider could not start.
public struct DevProviderError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
}

/// Builds the Hummingbird application, as Hummingbird's template does.
func buildApplication(
    state: ProviderState, journeys: JourneyState, faults: DevProviderFaults, configuration: DevProviderConfiguration,
    adminToken: String, host: String, port: Int, logger: Logger,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void
) -> some ApplicationProtocol {
    let router = buildRouter(
        state: state, journeys: journeys, faults: faults, configuration: configuration, adminToken: adminToken)
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: nil),
        onServerRunning: onServerRunning,
        logger: logger)
}

func buildRouter(
    state: ProviderState, journeys: JourneyState, faults: DevProviderFaults, configuration: DevProviderConfiguration,
    adminToken: String
) -> Router<ProviderContext> {
    let router = Router(context: ProviderContext.self)
    let endpoints = Endpoints(state: state, journeys: journeys, faults: faults, configuration: configuration)
    AdminEndpoints(
        faults: faults, token: adminToken, issuer: { await state.issuer },
        rotate: { try await state.keys.rotate(now: await state.currentDate) },
        signOutUser: { username in await endpoints.endSessions(of: username) }
    ).register(on: router)
    let fault = FaultMiddleware(faults: faults, realm: configuration.realm)
    // The root issuer, and the Ping realm's below /oauth2/realms/root/realms/REALM: the same
    // OAuth endpoints, each naming its own issuer.
    registerOAuth(endpoints, on: router.group().add(middleware: fault), realm: false)
    registerOAuth(
        endpoints,
        on: router.group(RouterPath(configuration.realmIssuerPath)).add(middleware: fault).add(
            middleware: RealmIssuerMiddleware(path: configuration.realmIssuerPath)), realm: true)
    routes(for: endpoints, faults: faults, configuration: configuration, on: router.group().add(middleware: fault))
    return router
}

/// The OAuth endpoints of one issuer. The realm's issuer has no device flow, no global
/// sign-out and no client registration, as AM's has not.
private func registerOAuth(_ endpoints: Endpoints, on routes: RouterGroup<ProviderContext>, realm: Bool) {
    func path(_ endpoint: DevProviderEndpoint) -> RouterPath {
        RouterPath(realm ? String(endpoint.path.dropFirst()) : endpoint.path)
    }
    routes.get(path(.discovery), use: endpoints.openIDConfiguration)
    routes.get(path(.jwks), use: endpoints.jwks)
    routes.on(path(.authorization), method: .get, use: endpoints.authorize)
    routes.on(path(.authorization), method: .post, use: endpoints.authorize)
    routes.post(path(.token), use: endpoints.token)
    routes.post(path(.revocation), use: endpoints.revocation)
    routes.post(path(.introspection), use: endpoints.introspection)
    routes.get(path(.userinfo), use: endpoints.userinfo)
    routes.post(path(.userinfo), use: endpoints.userinfo)
    routes.get(path(.endSession), use: endpoints.endSession)
    routes.post(path(.endSession), use: endpoints.endSession)
    guard !realm else { return }
    routes.get(path(.metadata), use: endpoints.authorizationServerMetadata)
    routes.post(path(.globalSignOut), use: endpoints.globalSignOut)
    routes.post(path(.deviceAuthorization), use: endpoints.deviceAuthorization)
    routes.post(path(.registration), use: endpoints.register)
    routes.get(RouterPath(DevProviderEndpoint.registration.path + "/:client_id"), use: endpoints.manageRegistration)
    routes.delete(RouterPath(DevProviderEndpoint.registration.path + "/:client_id"), use: endpoints.manageRegistration)
    routes.get(path(.deviceVerification), use: endpoints.device)
    routes.post(path(.deviceVerification), use: endpoints.device)
    for resource in endpoints.configuration.protectedResources {
        routes.get(RouterPath("/.well-known/oauth-protected-resource" + resource.path)) { request, _ in
            await endpoints.resourceMetadata(resource, request)
        }
        for method in [HTTPRequest.Method.get, .post] {
            routes.on(RouterPath(resource.path), method: method) { request, _ in
                await endpoints.protectedResource(resource, request)
            }
        }
    }
}

/// PingAM's journey and session endpoints, in the configured realm.
private func routes(
    for endpoints: Endpoints, faults: DevProviderFaults, configuration: DevProviderConfiguration,
    on routes: RouterGroup<ProviderContext>
) {
    let journeys = JourneyEndpoints(journeys: endpoints.journeys, faults: faults)
    let realm = configuration.realm
    routes.post(RouterPath(DevProviderEndpoint.journey.path(realm: realm)), use: journeys.authenticate)
    routes.get(RouterPath(DevProviderEndpoint.serverInfo.path(realm: realm)), use: journeys.serverInfo)
    routes.get(RouterPath("/json/realms/root/realms/\(realm)/serverinfo/*"), use: journeys.serverInfo)
    routes.post(RouterPath(DevProviderEndpoint.sessionLogout.path(realm: realm)), use: journeys.sessions)
}
