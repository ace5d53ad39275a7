import Crypto
public import Foundation

extension OpenIDProvider {
    /// Signs a user in and stores the credential.
    ///
    /// - Parameters:
    ///   - method: password, browser or device code.
    ///   - scopes: the scopes to ask for; the configuration's by default.
    ///   - resources: the resources the grant is for (RFC 8707); the configuration's by default.
    ///     They are kept with the credential (``Token/resources``).
    ///   - loginHint: who is expected to sign in (`login_hint`), for a sign-in through the browser
    ///     or by device code.
    ///   - store: where the credential goes.
    ///   - tags: application tags for the credential.
    ///   - makeDefault: make it the default account (the first account always becomes it).
    /// - Returns: the credential's live handle.
    public func signIn(
        _ method: SignInMethod,
        scopes: [String]? = nil,
        resources: [URL]? = nil,
        loginHint: String? = nil,
        into store: CredentialStore,
        tags: [String: String] = [:],
        makeDefault: Bool = false
    ) async throws(ProviderError) -> Credential {
        // Its requests share what the provider publishes through the store that keeps it.
        let signedIn = try await store.capabilities.sharing { () async throws(ProviderError) in
            try await token(for: method, scopes: scopes, resources: resources, loginHint: loginHint)
        }
        return try await self.store(signedIn, in: store, tags: tags, makeDefault: makeDefault)
    }

    /// The tokens of a sign-in, not stored, for `resources` (RFC 8707; the configuration's by
    /// default) too; `loginHint` goes with a sign-in through the browser or by device code.
    public func token(
        for method: SignInMethod, scopes: [String]? = nil, resources: [URL]? = nil, loginHint: String? = nil
    ) async throws(ProviderError) -> Token {
        switch method {
        case .password(let username, let password):
            return try await passwordToken(
                username: username, password: password, scopes: scopes, resources: resources)
        case .browser(let listener, let timeout, let open):
            let session = try await listener.start()
            do {
                let request = try await authorizationRequest(
                    redirectURI: session.redirectURI,
                    parameters: AuthorizationParameters(scopes: scopes, resources: resources, loginHint: loginHint))
                await open(request.url)
                let callback = try await session.callback(state: request.state, timeout: timeout)
                await session.close()
                return try await completeAuthorization(request, callbackURL: callback)
            } catch {
                await session.close()
                throw error
            }
        case .deviceCode(let prompt):
            let authorization = try await startDeviceAuthorization(
                scopes: scopes, resources: resources, loginHint: loginHint)
            await prompt(authorization)
            return try await completeDeviceAuthorization(authorization)
        }
    }

    // MARK: Authorization code + PKCE (RFC 6749 §4.1, RFC 7636, RFC 8252)

    /// Builds an authorization request with a fresh `state`, `nonce` and PKCE S256 pair.
    public func authorizationRequest(redirectURI: URL, scopes: [String]? = nil, prompt: String? = nil)
        async throws(ProviderError) -> AuthorizationRequest
    {
        try await authorizationRequest(
            redirectURI: redirectURI,
            parameters: AuthorizationParameters(
                scopes: scopes, prompt: prompt.map { $0.split(separator: " ").map(String.init) } ?? []))
    }

    /// Builds an authorization request with a fresh `state`, `nonce` and PKCE S256 pair, asking
    /// for what `parameters` say (`prompt=consent` added for `offline_access`, OpenID Connect
    /// Core §11).
    public func authorizationRequest(redirectURI: URL, parameters: AuthorizationParameters)
        async throws(ProviderError) -> AuthorizationRequest
    {
        let endpoint = try await endpoint(.authorization)
        guard EndpointSecurity.isAcceptable(endpoint) else {
            throw ProviderError(
                .insecureEndpoint, endpoint: .authorization, reason: "The authorization endpoint is not https.")
        }
        let scopes = parameters.scopes ?? configuration.scopes
        let verifier = Self.randomString(bytes: 32)
        let challenge = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
        let state = Self.randomString(bytes: 16)
        let nonce = Self.randomString(bytes: 16)
        var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)
        var items = components?.queryItems ?? []
        items += [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: configuration.clientID),
            URLQueryItem(name: "redirect_uri", value: redirectURI.absoluteString),
            URLQueryItem(name: "scope", value: scopes.joined(separator: " ")),
            URLQueryItem(name: "state", value: state), URLQueryItem(name: "nonce", value: nonce),
            URLQueryItem(name: "code_challenge", value: challenge),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        let prompt = parameters.prompt(forScopes: scopes)
        if !prompt.isEmpty { items.append(URLQueryItem(name: "prompt", value: prompt.joined(separator: " "))) }
        if let maxAge = parameters.maxAge { items.append(URLQueryItem(name: "max_age", value: String(maxAge))) }
        if let hint = parameters.loginHint { items.append(URLQueryItem(name: "login_hint", value: hint)) }
        if !parameters.acrValues.isEmpty {
            items.append(URLQueryItem(name: "acr_values", value: parameters.acrValues.joined(separator: " ")))
        }
        // RFC 8707 §2.1: the resources the grant is for, each a `resource` parameter.
        let resources = parameters.resources ?? configuration.resources
        items += Self.resourceFields(resources).map { URLQueryItem(name: $0.0, value: $0.1) }
        components?.queryItems = items
        // URLComponents leaves "+" as is, which a server reads as a space.
        let query = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = query
        guard let url = components?.url else {
            throw ProviderError(
                .invalidResponse, endpoint: .authorization, reason: "The authorization URL is not valid.")
        }
        return AuthorizationRequest(
            url: url, redirectURI: redirectURI, state: state, nonce: nonce, codeVerifier: verifier, resources: resources
        )
    }

    /// Checks the redirect the browser came back with and exchanges its code for tokens.
    public func completeAuthorization(_ request: AuthorizationRequest, callbackURL: URL) async throws(ProviderError)
        -> Token
    {
        try await completeAuthorization(request, callbackURL: callbackURL, verifyingIDToken: true)
    }

    /// Checks the redirect and exchanges its code. Unless `verifyingIDToken`, a new ID token is
    /// only checked for the request's nonce: the caller verifies it once the tokens are stored.
    func completeAuthorization(_ request: AuthorizationRequest, callbackURL: URL, verifyingIDToken: Bool)
        async throws(ProviderError) -> Token
    {
        let items = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
        func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
        // A parameter given twice is an answer no provider sends: which one counts is what an
        // attacker who added the second would choose.
        for name in ["code", "state", "iss", "error"] where items.filter({ $0.name == name }).count > 1 {
            throw ProviderError(
                .invalidResponse, endpoint: .authorization,
                reason: "The redirect carries \(name) more than once; it was refused and nothing was sent.")
        }
        guard value("state") == request.state else {
            throw ProviderError(
                .stateMismatch, endpoint: .authorization,
                reason: "The redirect's state is not the one sent; the answer was not for this request.")
        }
        // RFC 9207 §2.4: whose answer it is, checked before anything in it is acted on (an error
        // included); required when the provider says it always sends it.
        let metadata = try await metadata()
        if let issuer = value("iss") {
            guard issuer == metadata.issuer else {
                throw ProviderError(
                    .invalidResponse, endpoint: .authorization,
                    reason: "The redirect names another issuer (RFC 9207); it was not this provider's answer.")
            }
        } else if metadata.fields["authorization_response_iss_parameter_supported"] == .bool(true) {
            throw ProviderError(
                .invalidResponse, endpoint: .authorization,
                reason: "The redirect names no issuer, which this provider always sends (RFC 9207); it was ignored.")
        }
        if let error = value("error") {
            throw ProviderError(
                .oauth, endpoint: .authorization, reason: "The provider refused the authorization request.",
                oauthError: ProviderWire.redact(error, removing: [request.codeVerifier], limit: 100)
                    .map(OAuthErrorCode.init(rawValue:)),
                errorDescription: ProviderWire.redact(value("error_description"), removing: [request.codeVerifier]))
        }
        guard let code = value("code") else {
            throw ProviderError(.invalidResponse, endpoint: .authorization, reason: "The redirect carries no code.")
        }
        // RFC 8707 §2.2: the exchange names the access token's audience. With one resource asked
        // for, that one; with several the grant covers them all, the first access token is the
        // provider's default, and each resource's token comes with the refresh token (a token
        // for several audiences at once is what providers refuse: Glewlwyd answers
        // `invalid_target`).
        let audience = request.resources.count == 1 ? Self.resourceFields(request.resources) : []
        var token = try await tokenRequest(
            [
                ("grant_type", "authorization_code"), ("code", code),
                ("redirect_uri", request.redirectURI.absoluteString), ("code_verifier", request.codeVerifier),
            ] + audience, nonce: request.nonce, verifyingIDToken: verifyingIDToken,
            proofKey: try await signInProofKey())
        token.recordGrant(for: request.resources)
        return token
    }

    // MARK: Device authorization grant (RFC 8628)

    /// Asks for a device code and a user code; `loginHint` (who is expected to sign in) goes as
    /// `login_hint`, which RFC 8628 leaves to providers: one that does not know it ignores it
    /// (RFC 6749 §3.1).
    public func startDeviceAuthorization(
        scopes: [String]? = nil, resources: [URL]? = nil, loginHint: String? = nil
    ) async throws(ProviderError) -> DeviceAuthorization {
        let resources = resources ?? configuration.resources
        let form =
            [("scope", (scopes ?? configuration.scopes).joined(separator: " "))] + Self.resourceFields(resources)
            + (loginHint.map { [("login_hint", $0)] } ?? [])
        let fields = try await wire.json(
            .form(
                .deviceAuthorization, try await endpoint(.deviceAuthorization), form, clientID: configuration.clientID,
                authentication: configuration.authentication(for: .deviceAuthorization)))
        guard let deviceCode = fields["device_code"]?.stringValue, let userCode = fields["user_code"]?.stringValue,
            let uri = (fields["verification_uri"] ?? fields["verification_url"])?.stringValue
        else {
            throw ProviderError(
                .invalidResponse, endpoint: .deviceAuthorization,
                reason: "The device authorization answer lacks fields.")
        }
        // What the user is shown to open: a web page, never another scheme.
        func webPage(_ text: String, _ name: String) throws(ProviderError) -> URL {
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw ProviderError(
                    .invalidResponse, endpoint: .deviceAuthorization,
                    reason: "The device authorization answer's \(name) is not an http(s) URL; nothing is shown.")
            }
            return url
        }
        let verificationURI = try webPage(uri, "verification_uri")
        let complete = fields["verification_uri_complete"]?.stringValue
        // RFC 8628 §3.2: 5 seconds when the answer names none; one outside a second to an hour
        // is no interval to poll by.
        let interval = fields["interval"]?.doubleValue ?? 5
        guard interval >= 1, interval <= 3_600 else {
            throw ProviderError(
                .invalidResponse, endpoint: .deviceAuthorization,
                reason: "The device authorization answer's interval is outside 1 to 3600 seconds; nothing was polled.")
        }
        let expiresIn = ProviderNumbers.seconds(fields["expires_in"]?.doubleValue, fallback: 600)
        return DeviceAuthorization(
            userCode: userCode, verificationURI: verificationURI,
            verificationURIComplete: try complete.map { text throws(ProviderError) in
                try webPage(text, "verification_uri_complete")
            },
            expiresAt: now().addingTimeInterval(expiresIn), interval: Int(interval), deviceCode: deviceCode,
            resources: resources)
    }

    /// Polls the token endpoint until the user approves, denies, or the code expires.
    public func completeDeviceAuthorization(_ authorization: DeviceAuthorization) async throws(ProviderError) -> Token {
        var interval = max(authorization.interval, 1)
        let proofKey = try await signInProofKey()
        while true {
            guard now() < authorization.expiresAt else {
                throw ProviderError(
                    .timedOut, endpoint: .deviceAuthorization,
                    reason: "The device code expired before the user finished.")
            }
            do {
                try await clock.sleep(for: .seconds(interval))
            } catch {
                throw ProviderError(.cancelled, reason: "Waiting for the device sign-in was cancelled.")
            }
            do {
                var token = try await tokenRequest(
                    [
                        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                        ("device_code", authorization.deviceCode),
                    ], proofKey: proofKey)
                token.recordGrant(for: authorization.resources)
                return token
            } catch {
                switch error.oauthError {
                case .authorizationPending?:
                    continue
                case .slowDown?:
                    interval = min(interval + 5, 3_600)  // RFC 8628 §3.5
                case .expiredToken?:
                    throw ProviderError(
                        .timedOut, endpoint: .token, reason: "The device code expired before the user finished.",
                        oauthError: .expiredToken)
                default:
                    throw error
                }
            }
        }
    }

    static func randomString(bytes: Int) -> String {
        Base64URL.encode(SymmetricKey(size: SymmetricKeySize(bitCount: bytes * 8)).withUnsafeBytes { Data($0) })
    }
}
