public import Foundation
import HTTPTypes
import JWTKit
public import Logging

/// A standards-based OpenID Connect / OAuth 2.0 provider, as one client sees it: discovery
/// (cached), sign-in, refresh, revocation, introspection, userinfo and verified ID tokens.
///
/// ```swift
/// let provider = try await OpenIDProvider.discover(
///     OpenIDProviderConfiguration(issuer: issuer, clientID: "latchkey-cli"), transport: transport)
/// let credential = try await provider.signIn(.password(username: "alice", password: pw), into: store)
/// let token = try await credential.accessToken()
/// ```
public actor OpenIDProvider: IdentityProvider {
    /// How the provider is reached.
    public nonisolated let configuration: OpenIDProviderConfiguration
    /// The issuer and client of the tokens it issues.
    public nonisolated let identity: ProviderIdentity
    let transport: any HTTPTransport
    let logger: Logger
    let wire: ProviderWire
    /// The time the provider goes by: token dates, ID-token checks, device-code polls.
    public nonisolated let clock: any LatchkeyClock
    private var cachedMetadata: ProviderMetadata?
    private var metadataTask: Task<Result<ProviderMetadata, ProviderError>, Never>?
    /// The RFC 8414 document read for endpoints the OpenID configuration lacks: not yet asked
    /// for (`nil`), or what it added (empty when there is none).
    private var supplement: [EndpointKind: URL]?
    private var supplementTask: Task<Result<[EndpointKind: URL], ProviderError>, Never>?
    private var idTokenChecks: IDTokenChecks?

    /// Creates a provider; discovery happens on first use (or pass `metadata` to skip it).
    ///
    /// - Parameters:
    ///   - clock: the time of token dates and ID-token checks, and what device-code polls wait on.
    public init(
        configuration: OpenIDProviderConfiguration,
        transport: any HTTPTransport,
        metadata: ProviderMetadata? = nil,
        logger: Logger? = nil,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.configuration = configuration
        self.identity = ProviderIdentity(issuer: configuration.issuer.absoluteString, clientID: configuration.clientID)
        self.transport = transport
        self.cachedMetadata = metadata
        self.logger = logger ?? .disabled("latchkey.provider")
        self.wire = ProviderWire(transport: transport, options: configuration.requestOptions, logger: self.logger)
        self.clock = clock
    }

    /// The current date, by the provider's clock.
    nonisolated func now() -> Date { clock.date }

    /// Creates a provider and fetches its discovery document now, so that a wrong issuer fails here.
    public static func discover(
        _ configuration: OpenIDProviderConfiguration,
        transport: any HTTPTransport,
        logger: Logger? = nil
    ) async throws(ProviderError) -> OpenIDProvider {
        let provider = OpenIDProvider(configuration: configuration, transport: transport, logger: logger)
        _ = try await provider.metadata()
        return provider
    }

    // MARK: Metadata

    /// The provider's metadata: discovery, else RFC 8414 metadata, with the configured endpoints
    /// laid over it. Fetched once; concurrent callers share the fetch.
    public func metadata() async throws(ProviderError) -> ProviderMetadata {
        if let cachedMetadata { return cachedMetadata }
        if metadataTask == nil {
            metadataTask = Task { await self.fetchMetadata() }
        }
        guard let task = metadataTask else { throw ProviderError(.cancelled, reason: "Discovery was cancelled.") }
        let result = await task.value
        metadataTask = nil
        switch result {
        case .success(let metadata):
            cachedMetadata = metadata
            return metadata
        case .failure(let error):
            throw error
        }
    }

    /// The two places a provider publishes its metadata: the OpenID configuration below the
    /// issuer, and the RFC 8414 document, whose well-known segment goes between the host and
    /// the issuer's path (RFC 8414 §3.1).
    private var metadataLocations: (openID: URL?, oauth: URL?) {
        let issuer = configuration.issuer.absoluteString
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var oauth: URL?
        if let components = URLComponents(url: configuration.issuer, resolvingAgainstBaseURL: false),
            let scheme = components.scheme, let host = components.host
        {
            let port = components.port.map { ":\($0)" } ?? ""
            let path = components.path == "/" ? "" : components.path
            oauth = URL(string: "\(scheme)://\(host)\(port)/.well-known/oauth-authorization-server\(path)")
        }
        return (URL(string: trimmed + "/.well-known/openid-configuration"), oauth)
    }

    private func fetchMetadata() async -> Result<ProviderMetadata, ProviderError> {
        let locations = metadataLocations
        var lastError = ProviderError(
            .missingEndpoint, endpoint: .discovery, reason: "No discovery document was found.")
        for (index, location) in [locations.openID, locations.oauth].enumerated() {
            guard let url = location else { continue }
            do {
                var metadata = try await fetchDocument(url)
                metadata.endpoints.merge(configuration.endpoints) { _, configured in configured }
                // Read from the RFC 8414 document already: there is nothing to add from it.
                if index == 1 { supplement = [:] }
                return .success(metadata)
            } catch {
                lastError = error
                // Only a missing document moves on to the next location.
                if error.status != 404 && error.code != .invalidResponse { return .failure(error) }
            }
        }
        if !configuration.endpoints.isEmpty, configuration.endpoints[.token] != nil {
            // Everything needed is configured: go on without discovery.
            supplement = [:]
            return .success(
                ProviderMetadata(issuer: configuration.issuer.absoluteString, endpoints: configuration.endpoints))
        }
        return .failure(lastError)
    }

    /// Fetches one metadata document and checks that it is this issuer's.
    private func fetchDocument(_ url: URL) async throws(ProviderError) -> ProviderMetadata {
        let issuer = configuration.issuer.absoluteString
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let metadata = try ProviderMetadata(
            document: try await requestJSON(.discovery, url: url, method: .get, form: nil))
        guard metadata.issuer == issuer || metadata.issuer == trimmed else {
            throw ProviderError(
                .invalidResponse, endpoint: .discovery,
                reason: "The discovery document names another issuer than the one configured.")
        }
        return metadata
    }

    /// The endpoints of the RFC 8414 document that the OpenID configuration lacks, fetched once
    /// (concurrent callers share the fetch). A missing or foreign document adds nothing; a
    /// network failure is thrown and the fetch is tried again next time.
    private func supplementaryEndpoints() async throws(ProviderError) -> [EndpointKind: URL] {
        if let supplement { return supplement }
        if supplementTask == nil {
            supplementTask = Task { await self.fetchSupplement() }
        }
        guard let task = supplementTask else { return [:] }
        let result = await task.value
        supplementTask = nil
        let endpoints = try result.get()
        supplement = endpoints
        if var metadata = cachedMetadata {
            metadata.endpoints.merge(endpoints) { existing, _ in existing }
            cachedMetadata = metadata
        }
        return endpoints
    }

    private func fetchSupplement() async -> Result<[EndpointKind: URL], ProviderError> {
        guard let url = metadataLocations.oauth else { return .success([:]) }
        do {
            let document = try await fetchDocument(url)
            logger.debug(
                "endpoints added from the RFC 8414 metadata",
                metadata: ["endpoints": "\(document.endpoints.keys.map(\.rawValue).sorted())"])
            return .success(document.endpoints)
        } catch {
            if error.isRetryable { return .failure(error) }
            logger.debug("no RFC 8414 metadata to add", metadata: ["error": "\(error)"])
            return .success([:])
        }
    }

    /// The URL of an endpoint: from configuration, else from the OpenID configuration, else
    /// from the RFC 8414 metadata (read only when the first lacks it).
    public func endpoint(_ kind: EndpointKind) async throws(ProviderError) -> URL {
        if let configured = configuration.endpoints[kind] { return configured }
        if let url = try await metadata().endpoints[kind] { return url }
        if let url = try await supplementaryEndpoints()[kind] { return url }
        throw ProviderError(
            .missingEndpoint, endpoint: kind,
            reason: "The provider has no \(kind) endpoint in its metadata; set one in the configuration.")
    }

    // MARK: JWKS and ID tokens

    /// The ID-token checks, with this provider's key set (fetched once for many callers).
    private var idTokens: IDTokenChecks {
        if let idTokenChecks { return idTokenChecks }
        let checks = IDTokenChecks(
            clientID: configuration.clientID, algorithms: configuration.idTokenAlgorithms, leeway: configuration.leeway,
            logger: logger
        ) { () async throws(ProviderError) -> JWKS in try await self.fetchJWKS() }
        idTokenChecks = checks
        return checks
    }

    private func fetchJWKS() async throws(ProviderError) -> JWKS {
        let body = try await request(.jwks, url: try await endpoint(.jwks), method: .get, form: nil).body
        do {
            return try JSONDecoder().decode(JWKS.self, from: body)
        } catch {
            throw ProviderError(.invalidResponse, endpoint: .jwks, reason: "The JWKS is not a JWK Set.")
        }
    }

    /// Verifies an ID token from this provider for this client.
    public func verifyIDToken(
        _ idToken: String, nonce: String? = nil, accessToken: String? = nil, subject: String? = nil
    ) async throws(ProviderError) -> IDTokenClaims {
        try await idTokens.verify(
            idToken, issuer: try await metadata().issuer, nonce: nonce, accessToken: accessToken, subject: subject,
            now: now())
    }

    // MARK: Token endpoint

    /// Sends a token request and turns the answer into a ``Token`` whose ID token (if any) was verified.
    ///
    /// - Parameter verifyingIDToken: `false` for a refresh, whose ID token is verified only after
    ///   the answer was stored (see ``IdentityProvider/verifyRefreshedIDToken(of:previous:)``).
    func tokenRequest(
        _ form: [(String, String)], nonce: String? = nil, previous: Token? = nil, verifyingIDToken: Bool = true
    ) async throws(ProviderError) -> Token {
        let fields = try await requestJSON(
            .token, url: try await endpoint(.token), method: .post, form: form,
            authentication: configuration.authentication(for: .token), secrets: form.map(\.1))
        let response: TokenResponse
        do {
            response = try TokenResponse(fields: fields)
        } catch {
            throw ProviderError(
                .invalidResponse, endpoint: .token, reason: "The token response is not valid.", underlying: error)
        }
        if let idToken = response.idToken {
            if verifyingIDToken {
                _ = try await verifyIDToken(
                    idToken, nonce: nonce, accessToken: response.accessToken,
                    subject: IDTokenChecks.subject(of: previous))
            } else if let nonce, UnverifiedClaims.read(idToken)?["nonce"]?.stringValue != nonce {
                // Verified in full once stored; an answer to another request is refused at once.
                throw ProviderError(
                    .idTokenRejected, endpoint: .token, reason: "The ID token does not carry the nonce sent.")
            }
        }
        var token = Token(response: response, issuedAt: now(), provider: identity)
        if let previous {
            // A refresh answer may leave out what did not change (RFC 6749 §6, OIDC Core §12.2).
            token.refreshToken = token.refreshToken ?? previous.refreshToken
            token.idToken = token.idToken ?? previous.idToken
            token.deviceSecret = token.deviceSecret ?? previous.deviceSecret
            token.sessionToken = previous.sessionToken
            token.scopes = token.scopes ?? previous.scopes
        }
        return token
    }

    /// Signs in with a username and password (the resource owner password grant, RFC 6749 §4.3),
    /// for scripts and tests, when ``OpenIDProviderConfiguration/allowsPasswordGrant`` says so:
    /// RFC 9700 §2.4 says the grant must not be used. Nothing is sent otherwise.
    public func passwordToken(username: String, password: String, scopes: [String]? = nil)
        async throws(ProviderError) -> Token
    {
        guard configuration.allowsPasswordGrant else {
            throw ProviderError(
                .unsupported, endpoint: .token,
                reason:
                    "The password grant is off for this provider (RFC 9700 §2.4: it must not be used). Sign in through the browser or with a device code; for scripts and tests, turn it on with allowsPasswordGrant."
            )
        }
        return try await tokenRequest([
            ("grant_type", "password"), ("username", username), ("password", password),
            ("scope", (scopes ?? configuration.scopes).joined(separator: " ")),
        ])
    }

    /// Fetches the metadata, and the JWKS when a new ID token may come back, before a refresh.
    public func prepareRefresh(of token: Token) async throws(ProviderError) {
        _ = try await endpoint(.token)
        if token.idToken != nil || token.scopes?.contains("openid") == true {
            _ = try await idTokens.keys.keys()
        }
    }

    public func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> Token {
        guard let refreshToken = token.refreshToken else {
            throw ProviderError(.signInRequired, endpoint: .token, reason: "The credential has no refresh token.")
        }
        do {
            return try await tokenRequest(
                [("grant_type", "refresh_token"), ("refresh_token", refreshToken)], previous: token,
                verifyingIDToken: false)
        } catch {
            // Some providers answer a dead refresh token with a bare 400 and no OAuth error.
            if error.oauthError == .invalidGrant || (error.code == .httpStatus && error.status == 400) {
                throw ProviderError(
                    .signInRequired, endpoint: .token, reason: "The refresh token was rejected; sign in again.",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status)
            }
            throw error
        }
    }

    public func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {
        guard let idToken = refreshed.idToken else { return }
        _ = try await verifyIDToken(
            idToken, accessToken: refreshed.accessToken, subject: IDTokenChecks.subject(of: previous))
    }

    // MARK: Revocation, introspection, userinfo

    public func revoke(_ value: String, kind: TokenKind) async throws(ProviderError) {
        var form = [("token", value)]
        if kind == .accessToken || kind == .refreshToken { form.append(("token_type_hint", kind.rawValue)) }
        _ = try await request(
            .revocation, url: try await endpoint(.revocation), method: .post, form: form,
            authentication: configuration.authentication(for: .revocation), secrets: [value])
    }

    public func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection {
        var form = [("token", value)]
        if kind == .accessToken || kind == .refreshToken { form.append(("token_type_hint", kind.rawValue)) }
        let fields = try await requestJSON(
            .introspection, url: try await endpoint(.introspection), method: .post, form: form,
            authentication: configuration.authentication(for: .introspection), secrets: [value])
        guard case .bool(let active) = fields["active"] else {
            throw ProviderError(.invalidResponse, endpoint: .introspection, reason: "The answer has no active field.")
        }
        return Introspection(active: active, fields: fields)
    }

    public func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        try await requestJSON(
            .userinfo, url: try await endpoint(.userinfo), method: .get, form: nil, bearer: accessToken,
            secrets: [accessToken])
    }

    // MARK: Sign-out

    /// Global sign-out through the provider's own endpoint (Latchkey's development provider
    /// advertises one as `latchkey_global_signout_endpoint`). Providers without one throw
    /// ``ProviderError/Code/unsupported``.
    public func globalSignOut(accessToken: String) async throws(ProviderError) {
        let url: URL
        do {
            url = try await endpoint(.globalSignOut)
        } catch  where error.code == .missingEndpoint {
            throw ProviderError(
                .unsupported, endpoint: .globalSignOut, reason: "The provider has no global sign-out endpoint.")
        }
        _ = try await request(
            .globalSignOut, url: url, method: .post, form: [], bearer: accessToken, secrets: [accessToken])
    }

    /// Whether discovery or configuration names a global sign-out endpoint. Throws when the
    /// metadata cannot be fetched: "unknown" is not "no".
    public func supportsGlobalSignOut() async throws(ProviderError) -> Bool {
        do {
            _ = try await endpoint(.globalSignOut)
            return true
        } catch  where error.code == .missingEndpoint {
            return false
        }
    }

    /// RP-initiated logout with `id_token_hint` (OpenID Connect RP-Initiated Logout 1.0 §2).
    /// A 2xx answer means the session ended server to server; a redirect means the provider wants
    /// a browser, so the URL to open is returned.
    public func endSession(idToken: String?) async throws(ProviderError) -> URL? {
        let base: URL
        do {
            base = try await endpoint(.endSession)
        } catch  where error.code == .missingEndpoint {
            throw ProviderError(
                .unsupported, endpoint: .endSession, reason: "The provider has no end-session endpoint.")
        }
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)
        var items = components?.queryItems ?? []
        if let idToken { items.append(URLQueryItem(name: "id_token_hint", value: idToken)) }
        items.append(URLQueryItem(name: "client_id", value: configuration.clientID))
        components?.queryItems = items
        guard let url = components?.url, EndpointSecurity.isAcceptable(url) else {
            throw ProviderError(
                .insecureEndpoint, endpoint: .endSession, reason: "The end-session endpoint is not https.")
        }
        let answer = try await wire.send(.endSession, HTTPRequest(method: .get, url: url), body: nil)
        switch answer.response.status.code {
        case 200..<300: return nil
        case 300..<400: return url
        default: throw Self.failure(.endSession, answer, secrets: [idToken].compactMap { $0 }, now: now())
        }
    }

    // MARK: HTTP

    /// Sends a request to an endpoint and returns the 2xx answer's body as a JSON object.
    func requestJSON(
        _ kind: EndpointKind, url: URL, method: HTTPRequest.Method, form: [(String, String)]?,
        authentication: ClientAuthentication? = nil, bearer: String? = nil, secrets: [String] = []
    ) async throws(ProviderError) -> [String: JSONValue] {
        let answer = try await request(
            kind, url: url, method: method, form: form, authentication: authentication, bearer: bearer, secrets: secrets
        )
        guard let fields = try? JSONDecoder().decode([String: JSONValue].self, from: answer.body) else {
            throw ProviderError(
                .invalidResponse, endpoint: kind, reason: "The \(kind) endpoint's answer is not a JSON object.",
                status: answer.response.status.code)
        }
        return fields
    }

    /// Sends a request to an endpoint; any non-2xx answer becomes a ``ProviderError``.
    func request(
        _ kind: EndpointKind, url: URL, method: HTTPRequest.Method, form: [(String, String)]?,
        authentication: ClientAuthentication? = nil, bearer: String? = nil, secrets: [String] = []
    ) async throws(ProviderError) -> HTTPTransportResponse {
        var fields = form ?? []
        var headers: [(String, String)] = []
        authentication?.apply(clientID: configuration.clientID, form: &fields, headers: &headers)
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        var request = HTTPRequest(method: method, url: url)
        request.headerFields[.accept] = "application/json"
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { request.headerFields[field] = value }
        }
        var body: Data?
        if method == .post {
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            body = FormEncoding.encode(fields)
        }
        let sent = secrets + [authentication?.secret].compactMap { $0 }
        return try await wire.exchange(kind, request, body: body) { answer in Self.failure(kind, answer, secrets: sent)
        }
    }

    /// The error an unsuccessful answer stands for (RFC 6749 §5.2, RFC 6750 §3).
    static func failure(_ kind: EndpointKind, _ answer: HTTPTransportResponse, secrets: [String], now: Date = Date())
        -> ProviderError
    {
        let status = answer.response.status.code
        let fields = ProviderWire.object(answer.body) ?? [:]
        var code = fields["error"]?.stringValue.map(OAuthErrorCode.init(rawValue:))
        if code == nil, let challenge = answer.response.headerFields[.wwwAuthenticate],
            let range = challenge.range(of: #"error=""#)
        {
            let rest = challenge[range.upperBound...]
            code = rest.firstIndex(of: "\"").map { OAuthErrorCode(rawValue: String(rest[..<$0])) }
        }
        return ProviderError(
            code == nil ? .httpStatus : .oauth, endpoint: kind,
            reason: "The \(kind) endpoint refused the request.", oauthError: code,
            errorDescription: ProviderWire.redact(fields["error_description"]?.stringValue, removing: secrets),
            status: status, retryAfter: ProviderWire.retryAfter(answer, now: now))
    }

    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3).
    static func retryAfter(_ value: String, now: Date = Date()) -> Duration? {
        ProviderWire.retryAfter(value, now: now)
    }
}
