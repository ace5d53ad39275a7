public import Foundation
import HTTPTypes
public import Logging

/// A PingAM or PingOne Advanced Identity Cloud realm, signed in to through a journey.
///
/// A journey is a server-driven sequence of pages of callbacks that ends in an SSO session.
/// OAuth tokens are then minted from that session without a browser (authorization code with
/// PKCE, the session sent in its header), and kept together with it in one credential:
///
/// ```swift
/// let ping = PingJourneyProvider(
///     configuration: PingJourneyConfiguration(
///         serverURL: server, realm: "alpha", journey: "Login", clientID: "latchkey-cli"),
///     transport: transport)
/// var step = try await ping.startJourney()
/// while case .page(var page) = step {
///     for index in page.callbacks.indices {
///         switch page.callbacks[index].kind {
///         case .name: page.callbacks[index].setText("alice")
///         case .password: page.callbacks[index].setText(password)
///         default: break
///         }
///     }
///     step = try await ping.next(page)
/// }
/// if case .success(let session) = step {
///     let credential = try await ping.signIn(session, into: store)
/// }
/// ```
///
/// The guide's operations map to Latchkey's: `token()` is ``Credential/accessToken(minimumValidity:)``
/// (minting through the session when no OAuth token is usable), `refresh()` is
/// ``Credential/refresh()``, `revoke()` is ``Credential/revoke(_:)`` (the session stays), and
/// `logout()` is ``CredentialStore/signOut(_:options:)``, whose `session-logout` step ends the
/// session while the OAuth tokens are revoked.
///
/// The OAuth side is an ``OpenIDProvider`` for the realm's issuer; this type adds the journey
/// and the session over AM's REST API.
public actor PingJourneyProvider: IdentityProvider {
    /// How the realm is reached.
    public nonisolated let configuration: PingJourneyConfiguration
    /// The realm's OAuth issuer and the client.
    public nonisolated let identity: ProviderIdentity
    /// The realm's OAuth side: discovery, token endpoint, revocation, userinfo, ID tokens.
    public nonisolated let openID: OpenIDProvider
    let wire: ProviderWire
    let logger: Logger
    /// The session header's name, from AM's `serverinfo` when not configured: fetched once.
    private nonisolated let cookieName = CachedValue<String, ProviderError>()

    /// Creates a provider; nothing is fetched until it is used.
    ///
    /// - Parameter clock: the time of token dates and ID-token checks.
    public init(
        configuration: PingJourneyConfiguration, transport: any HTTPTransport, logger: Logger? = nil,
        clock: any LatchkeyClock = SystemClock()
    ) {
        let logger = logger ?? .disabled("latchkey.ping")
        self.configuration = configuration
        self.openID = OpenIDProvider(
            configuration: configuration.openID, transport: transport, logger: logger, clock: clock)
        self.identity = openID.identity
        self.wire = ProviderWire(
            transport: transport, options: configuration.requestOptions, logger: logger, clock: clock,
            refusal: Self.refusal)
        self.logger = logger
    }

    // MARK: Journeys

    /// Starts the configured journey, or the one named: the first page, or at once the session.
    public func startJourney(_ journey: String? = nil) async throws(ProviderError) -> JourneyStep {
        try await journeyStep(journey ?? configuration.journey, page: nil)
    }

    /// Sends `page` back with its answers: the next page, or the session. A refusal (a wrong
    /// password) throws, with AM's message in ``ProviderError/errorDescription`` and its
    /// ``PingError`` in ``ProviderError/underlying``.
    public func next(_ page: JourneyPage) async throws(ProviderError) -> JourneyStep {
        try await journeyStep(configuration.journey, page: page)
    }

    private func journeyStep(_ journey: String, page: JourneyPage?) async throws(ProviderError) -> JourneyStep {
        var components = URLComponents(url: configuration.authenticateURL, resolvingAgainstBaseURL: false)
        components?.queryItems = [
            URLQueryItem(name: "authIndexType", value: "service"), URLQueryItem(name: "authIndexValue", value: journey),
        ]
        guard let url = components?.url else {
            throw ProviderError(.invalidResponse, endpoint: .journey, reason: "The journey URL is not valid.")
        }
        // The answers (a password among them) never reach an error's text.
        let secrets = page?.callbacks.flatMap { $0.inputs.compactMap(\.value.stringValue) } ?? []
        let fields = try await call(
            .journey, url: url, version: "resource=2.1, protocol=1.0", body: page.map { .object($0.answered) },
            secrets: secrets)
        if let tokenID = fields["tokenId"]?.stringValue, !tokenID.isEmpty {
            logger.debug("journey signed in", metadata: ["journey": "\(journey)"])
            return .success(
                JourneySession(
                    value: tokenID, successURL: fields["successUrl"]?.stringValue, realm: fields["realm"]?.stringValue))
        }
        guard let next = JourneyPage(json: fields) else {
            throw ProviderError(
                .invalidResponse, endpoint: .journey, reason: "AM's answer is neither a journey page nor a session.")
        }
        logger.debug(
            "journey page", metadata: ["journey": "\(journey)", "callbacks": "\(next.callbacks.map(\.type))"])
        return .page(next)
    }

    // MARK: The session

    /// The session header's name: configured, or from AM's `serverinfo` (fetched once).
    public func sessionCookieName() async throws(ProviderError) -> String {
        if let name = configuration.cookieName { return name }
        return try await cookieName.value { await self.fetchCookieName() }
    }

    private func fetchCookieName() async -> Result<String, ProviderError> {
        do throws(ProviderError) {
            let fields = try await call(
                .serverInfo, url: configuration.serverInfoURL, method: .get, version: "resource=1.1, protocol=1.0",
                body: nil, secrets: [])
            guard let name = fields["cookieName"]?.stringValue, HTTPField.Name(name) != nil else {
                throw ProviderError(
                    .invalidResponse, endpoint: .serverInfo, reason: "AM's serverinfo names no usable cookie name.")
            }
            return .success(name)
        } catch {
            return .failure(error)
        }
    }

    /// What AM says of `session` (`sessions?_action=validate`). A session AM does not know is
    /// not valid.
    public func validateSession(_ session: String) async throws(ProviderError) -> SessionValidity {
        let fields: [String: JSONValue]
        do {
            fields = try await call(
                .sessionValidation, url: try sessionsURL(action: "validate"), version: "resource=2.1, protocol=1.0",
                session: session, body: .object(["tokenId": .string(session)]), secrets: [session])
        } catch  where error.status == 401 {
            return SessionValidity(isValid: false)
        }
        guard case .bool(let valid)? = fields["valid"] else {
            throw ProviderError(
                .invalidResponse, endpoint: .sessionValidation, reason: "AM's answer does not say whether it is valid.")
        }
        return SessionValidity(isValid: valid, userID: fields["uid"]?.stringValue, realm: fields["realm"]?.stringValue)
    }

    /// Ends `session` on the server (`sessions?_action=logout`). The OAuth tokens minted from it
    /// stay valid: revoke them too. Ending a session that has ended already succeeds.
    public func logout(session: String) async throws(ProviderError) {
        do {
            // A 2xx is the logout, whatever its body says.
            _ = try await call(
                .sessionLogout, url: try sessionsURL(action: "logout"), version: "resource=3.1, protocol=1.0",
                session: session, body: nil, secrets: [session], readingAnswer: false)
        } catch  where error.status == 401 {
            // AM refuses a session it does not know: ended already, or sent under a wrong
            // header name. Only the first is a success; the session itself says which.
            guard try await validateSession(session).isValid else { return }
            throw ProviderError(
                error.code, endpoint: .sessionLogout,
                reason: "AM refused to end a session it says is valid; is the session cookie name right?",
                errorDescription: error.errorDescription, status: error.status, underlying: error.underlying)
        }
        logger.debug("session ended")
    }

    private func sessionsURL(action: String) throws(ProviderError) -> URL {
        var components = URLComponents(url: configuration.sessionsURL, resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "_action", value: action)]
        guard let url = components?.url else {
            throw ProviderError(.invalidResponse, endpoint: .sessionLogout, reason: "The sessions URL is not valid.")
        }
        return url
    }

    // MARK: OAuth tokens through the session

    /// Mints OAuth tokens from `session` (authorization code with PKCE, state and nonce; the
    /// session in its header, no browser) and returns them with the session, not stored. The
    /// ID token is verified.
    public func token(for session: JourneySession) async throws(ProviderError) -> Token {
        try await mint(session.value, verifyingIDToken: true)
    }

    /// Mints tokens from `session` and stores them with it: the account's credential. When the
    /// ID token is rejected or the store cannot take the credential, the session is ended as well
    /// as the grant revoked: it was made for this sign-in, and nothing would hold it.
    public func signIn(
        _ session: JourneySession, into store: CredentialStore, tags: [String: String] = [:], makeDefault: Bool = false
    ) async throws(ProviderError) -> Credential {
        do throws(ProviderError) {
            let minted = try await store.capabilities.sharing { () async throws(ProviderError) in
                try await token(for: session)
            }
            return try await self.store(minted, in: store, tags: tags, makeDefault: makeDefault)
        } catch  where error.code == .idTokenRejected || error.code == .storage {
            do {
                try await logout(session: session.value)
            } catch {
                logger.notice("the session of a rejected sign-in could not be ended", metadata: ["error": "\(error)"])
            }
            throw error
        }
    }

    /// The authorization request, sent with the session: AM answers with a redirect to the
    /// redirect URI that carries the code, which is exchanged as usual. A session AM no longer
    /// accepts throws ``ProviderError/Code/signInRequired``.
    private func mint(_ session: String, verifyingIDToken: Bool) async throws(ProviderError) -> Token {
        let header = try await sessionHeader()
        let request = try await openID.authorizationRequest(redirectURI: configuration.redirectURI)
        var http = try HTTPRequest.checked(.get, request.url, endpoint: .authorization)
        http.headerFields[header] = session
        http.headerFields[Self.acceptAPIVersion] = "resource=2.1, protocol=1.0"
        let mintRequest = ProviderRequest(.authorization, http, secrets: [session])
        let answer = try await wire.send(mintRequest)
        let status = answer.response.status.code
        guard (300..<400).contains(status), let location = answer.response.headerFields[.location],
            let callback = URL(string: location, relativeTo: request.url)?.absoluteURL,
            Self.isRedirect(callback, to: configuration.redirectURI)
        else {
            guard status < 400 else { throw OAuthRefusal.error(mintRequest, answer, now: openID.clock.date) }
            // A sign-in page, or a redirect to one: AM no longer takes the session.
            throw ProviderError(
                .signInRequired, endpoint: .authorization,
                reason: "AM no longer accepts the session; walk the journey again.", status: status)
        }
        do {
            var token = try await openID.completeAuthorization(
                request, callbackURL: callback, verifyingIDToken: verifyingIDToken)
            token.sessionToken = session
            logger.debug("tokens minted through the session")
            return token
        } catch  where error.oauthError == .loginRequired || error.oauthError == .interactionRequired {
            throw ProviderError(
                .signInRequired, endpoint: .authorization,
                reason: "AM no longer accepts the session; walk the journey again.", oauthError: error.oauthError,
                errorDescription: error.errorDescription)
        }
    }

    private func sessionHeader() async throws(ProviderError) -> HTTPField.Name {
        let name = try await sessionCookieName()
        guard let header = HTTPField.Name(name) else {
            throw ProviderError(
                .invalidResponse, endpoint: .serverInfo, reason: "The session cookie name is not a header name.")
        }
        return header
    }

    /// Whether `url` goes to `redirectURI` (same scheme, host, port and path).
    static func isRedirect(_ url: URL, to redirectURI: URL) -> Bool {
        url.scheme?.lowercased() == redirectURI.scheme?.lowercased()
            && url.host?.lowercased() == redirectURI.host?.lowercased()
            && url.port == redirectURI.port && url.path == redirectURI.path
    }

    // MARK: IdentityProvider

    /// Fetches what a refresh or a mint needs (metadata, keys, the cookie name) before anything
    /// is spent.
    public func prepareRefresh(of token: Token) async throws(ProviderError) {
        try await openID.prepareRefresh(of: token)
        if token.sessionToken != nil {
            _ = try await sessionHeader()
            _ = try await openID.endpoint(.authorization)
        }
    }

    /// New tokens for `token`: through its refresh token, or, when it has none or it is
    /// rejected, minted through its session. Only a session AM no longer accepts throws
    /// ``ProviderError/Code/signInRequired``.
    public func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> RefreshAnswer {
        if token.refreshToken != nil {
            do {
                return try await openID.exchangeRefreshToken(of: token)
            } catch  where error.requiresSignIn && token.sessionToken != nil {
                logger.debug("refresh token rejected; minting through the session")
            }
        }
        guard let session = token.sessionToken else {
            throw ProviderError(
                .signInRequired, endpoint: .token, reason: "The credential has neither a refresh token nor a session.")
        }
        return .token(try await mint(session, verifyingIDToken: false))
    }

    public func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {
        try await openID.verifyRefreshedIDToken(of: refreshed, previous: previous)
    }

    /// Revokes an OAuth token (RFC 7009), or for ``TokenKind/sessionToken`` ends the session.
    public func revoke(_ value: String, kind: TokenKind) async throws(ProviderError) {
        if kind == .sessionToken {
            try await logout(session: value)
        } else {
            try await openID.revoke(value, kind: kind)
        }
    }

    /// The OAuth tokens one by one, and the session through its logout.
    public nonisolated var revocableKinds: Set<TokenKind> {
        [.accessToken, .refreshToken, .deviceSecret, .sessionToken]
    }

    public func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        try await openID.userInfo(accessToken: accessToken)
    }

    /// RFC 7662 for the OAuth tokens; for ``TokenKind/sessionToken``, AM's session validation
    /// (`uid` and `realm` in the fields).
    public func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection {
        guard kind == .sessionToken else { return try await openID.introspect(value, kind: kind) }
        let validity = try await validateSession(value)
        var fields: [String: JSONValue] = ["active": .bool(validity.isValid)]
        fields["uid"] = validity.userID.map(JSONValue.string)
        fields["realm"] = validity.realm.map(JSONValue.string)
        return Introspection(active: validity.isValid, fields: fields)
    }

    /// The realm's OIDC end-session endpoint, which also ends the session the ID token names.
    public func endSession(idToken: String?) async throws(ProviderError) -> URL? {
        try await openID.endSession(idToken: idToken)
    }

    /// The realm's OpenID metadata and key set, fetched again.
    public func fetchPublishedDocuments() async throws(ProviderError) {
        try await openID.fetchPublishedDocuments()
    }

    /// What the realm's OpenID provider learned outside a store's call (DPoP nonces).
    public func share(with capabilities: StorageCapabilities) async {
        await openID.share(with: capabilities)
    }

    // MARK: Wire

    static let acceptAPIVersion = HTTPField.Name("Accept-API-Version") ?? .accept

    /// Calls one of AM's JSON endpoints and returns the 2xx answer's object (empty unless
    /// `readingAnswer`). A refusal becomes a ``ProviderError`` that carries AM's ``PingError``.
    private func call(
        _ kind: EndpointKind, url: URL, method: HTTPRequest.Method = .post, version: String, session: String? = nil,
        body: JSONValue?, secrets: [String], readingAnswer: Bool = true
    ) async throws(ProviderError) -> [String: JSONValue] {
        var headers = [Self.acceptAPIVersion: version]
        if let session { headers[try await sessionHeader()] = session }
        let request: ProviderRequest
        if method == .post {
            request = try .json(kind, url, body, headers: headers, secrets: secrets)
        } else {
            var http = try HTTPRequest.checked(method, url, endpoint: kind)
            http.headerFields[.accept] = "application/json"
            for (name, value) in headers { http.headerFields[name] = value }
            request = ProviderRequest(kind, http, secrets: secrets)
        }
        let answer = try await wire.exchange(request)
        guard readingAnswer else { return [:] }
        guard let fields = ProviderWire.object(answer.body) else {
            throw ProviderError(
                .invalidResponse, endpoint: kind, reason: "AM's \(kind) answer is not a JSON object.",
                status: answer.response.status.code)
        }
        return fields
    }

    /// AM's refusal, `{"code": 401, "reason": "Unauthorized", "message": "Login failure"}`.
    static func refusal(_ request: ProviderRequest, _ answer: HTTPTransportResponse, now: Date) -> ProviderError {
        let (kind, secrets) = (request.endpoint, request.secrets)
        let status = answer.response.status.code
        let fields = ProviderWire.object(answer.body) ?? [:]
        let message = ProviderWire.redact(fields["message"]?.stringValue, removing: secrets, limit: 300)
        let code = fields["code"]?.doubleValue.flatMap { $0.isFinite && abs($0) < 1_000 ? Int($0) : nil } ?? status
        return ProviderError(
            .httpStatus, endpoint: kind, reason: "AM refused the \(kind) request.", errorDescription: message,
            status: status, retryAfter: ProviderWire.retryAfter(answer, now: now),
            underlying: PingError(
                code: code, reason: ProviderWire.redact(fields["reason"]?.stringValue, removing: secrets, limit: 100),
                message: message))
    }
}
