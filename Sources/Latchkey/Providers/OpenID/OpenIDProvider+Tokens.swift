public import Foundation
import Logging

extension OpenIDProvider {
    /// Sends a token request and turns the answer into a ``Token`` whose ID token (if any) was verified.
    ///
    /// - Parameters:
    ///   - verifyingIDToken: `false` for a refresh, whose ID token is verified only after the
    ///     answer was stored (see ``IdentityProvider/verifyRefreshedIDToken(of:previous:)``).
    ///   - proofKey: a sign-in's new DPoP key; a refresh signs with `previous`'s.
    ///
    /// A sign-in's request (no `previous`) is not sent once the task is cancelled, and once sent
    /// it runs to its end even if the task is cancelled meanwhile (``Shielded``): the grant the
    /// provider issues is then handed back, for the caller to keep or revoke.
    func tokenRequest(
        _ form: [(String, String)], nonce: String? = nil, previous: Token? = nil, verifyingIDToken: Bool = true,
        proofKey: DPoPKey? = nil
    ) async throws(ProviderError) -> Token {
        guard previous == nil else {
            return try await exchange(
                form, nonce: nonce, previous: previous, verifyingIDToken: verifyingIDToken, proofKey: proofKey)
        }
        guard !Task.isCancelled else {
            throw ProviderError(.cancelled, endpoint: .token, reason: "The sign-in was cancelled; nothing was sent.")
        }
        return try await Shielded.run { () async throws(ProviderError) in
            try await self.exchange(
                form, nonce: nonce, previous: nil, verifyingIDToken: verifyingIDToken, proofKey: proofKey)
        }
    }

    private func exchange(
        _ form: [(String, String)], nonce: String?, previous: Token?, verifyingIDToken: Bool, proofKey: DPoPKey?
    ) async throws(ProviderError) -> Token {
        var request = try ProviderRequest.form(
            .token, try await endpoint(.token), form, clientID: configuration.clientID,
            authentication: configuration.authentication(for: .token), secrets: form.map(\.1))
        if let previous {
            request.proof = try proof(for: previous)
        } else if let proofKey {
            request.proof = DPoPSigning(key: proofKey, nonces: dpopNonces, clock: clock)
        }
        let fields = try await wire.json(request)
        let response: TokenResponse
        do {
            response = try TokenResponse(fields: fields)
        } catch {
            guard previous != nil else {
                // A sign-in's grant that will not be kept is revoked, not left alive.
                let refused = Token(
                    accessToken: fields["access_token"]?.stringValue,
                    refreshToken: fields["refresh_token"]?.stringValue, issuedAt: now(), provider: identity)
                await discard(refused, logger: logger)
                throw ProviderError(
                    .invalidResponse, endpoint: .token, reason: "The token response is not valid: \(error)",
                    underlying: error)
            }
            throw RotatedRefreshToken.refusal(
                .invalidResponse, reason: "The refresh answer is not valid: \(error)", fields: fields,
                underlying: error)
        }
        if previous?.dpop != nil, response.tokenType.lowercased() != "dpop" {
            // A bound credential never becomes a bearer one: its stored tokens stay.
            throw RotatedRefreshToken.refusal(
                .dpopNotHonored,
                reason:
                    "The provider answered the refresh of DPoP-bound tokens with \(response.tokenType) tokens; they were refused and the bound tokens kept.",
                fields: fields, underlying: nil)
        }
        if !response.ignoredFields.isEmpty {
            logger.notice(
                "the token response's fields could not be read and were taken as absent",
                metadata: ["fields": "\(response.ignoredFields.sorted())"])
        }
        if let idToken = response.idToken {
            if verifyingIDToken {
                do {
                    _ = try await verifyIDToken(
                        idToken, nonce: nonce, accessToken: response.accessToken,
                        subject: IDTokenChecks.subject(of: previous))
                } catch {
                    // A sign-in's grant that will not be kept is revoked, not left alive.
                    if previous == nil {
                        await discard(Token(response: response, issuedAt: now(), provider: identity), logger: logger)
                    }
                    throw error
                }
            } else if let nonce, UnverifiedClaims.read(idToken)?["nonce"]?.stringValue != nonce {
                // Verified in full once stored; an answer to another request is refused at once.
                throw ProviderError(
                    .idTokenRejected, endpoint: .token, reason: "The ID token does not carry the nonce sent.")
            }
        }
        var token = try await bind(Token(response: response, issuedAt: now(), provider: identity), to: proofKey)
        if let previous {
            token.dpop = previous.dpop
            token.resourceTokens = previous.resourceTokens
            token.resources = previous.resources
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
    public func passwordToken(username: String, password: String, scopes: [String]? = nil, resources: [URL]? = nil)
        async throws(ProviderError) -> Token
    {
        guard configuration.allowsPasswordGrant else {
            throw ProviderError(
                .unsupported, endpoint: .token,
                reason:
                    "The password grant is off for this provider (RFC 9700 §2.4: it must not be used). Sign in through the browser or with a device code; for scripts and tests, turn it on with allowsPasswordGrant."
            )
        }
        let resources = resources ?? configuration.resources
        var token = try await tokenRequest(
            [
                ("grant_type", "password"), ("username", username), ("password", password),
                ("scope", (scopes ?? configuration.scopes).joined(separator: " ")),
            ] + Self.resourceFields(resources), proofKey: try await signInProofKey())
        token.recordGrant(for: resources)
        return token
    }

    /// RFC 8707 §2.1: each resource a `resource` parameter.
    static func resourceFields(_ resources: [URL]) -> [(String, String)] {
        resources.map { ("resource", $0.absoluteString) }
    }

    /// Fetches the metadata, and the JWKS when a new ID token may come back, before a refresh.
    public func prepareRefresh(of token: Token) async throws(ProviderError) {
        _ = try await endpoint(.token)
        if token.idToken != nil || token.scopes?.contains("openid") == true {
            _ = try await idTokens.keys.keys()
        }
    }

    public func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> RefreshAnswer {
        try await refreshRequest(of: token, adding: [])
    }

    /// Asks for an access token for `resource` (RFC 8707 §2.2), for `scopes` or the grant's.
    public func exchangeRefreshToken(of token: Token, resource: String?, scopes: [String]?) async throws(ProviderError)
        -> RefreshAnswer
    {
        var fields: [(String, String)] = []
        if let resource { fields.append(("resource", resource)) }
        if let scopes { fields.append(("scope", scopes.joined(separator: " "))) }
        return try await refreshRequest(of: token, adding: fields)
    }

    private func refreshRequest(of token: Token, adding fields: [(String, String)]) async throws(ProviderError)
        -> RefreshAnswer
    {
        guard let refreshToken = token.refreshToken else {
            throw ProviderError(.signInRequired, endpoint: .token, reason: "The credential has no refresh token.")
        }
        do {
            return .token(
                try await tokenRequest(
                    [("grant_type", "refresh_token"), ("refresh_token", refreshToken)] + fields, previous: token,
                    verifyingIDToken: false))
        } catch {
            if let refused = RotatedRefreshToken.answer(refusing: error) { return refused }
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
}

extension Token {
    /// Records that a sign-in's grant was asked for `resources` (RFC 8707 §2.1). A grant with no
    /// refresh token can get no resource's own token later, so with exactly one resource the
    /// sign-in's access token, asked for that resource alone, is kept as its token: a provider
    /// that gives such a client no refresh token (nanoidp, for a metadata document's client)
    /// still serves the resource until the token expires. With a refresh token, the resource's
    /// token is asked for as usual: a provider may have ignored `resource` at the sign-in.
    mutating func recordGrant(for resources: [URL]) {
        self.resources = resources.isEmpty ? nil : resources.map(\.absoluteString)
        guard refreshToken == nil, resources.count == 1, let resource = self.resources?.first, let accessToken
        else { return }
        resourceTokens[ResourceToken.key(resource: resource, scopes: nil)] = ResourceToken(
            resource: resource, requestedScopes: nil, accessToken: accessToken, tokenType: tokenType, scopes: scopes,
            issuedAt: issuedAt, expiresAt: expiresAt)
    }
}
