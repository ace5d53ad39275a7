public import Foundation
import HTTPTypes

extension OpenIDProvider {
    // MARK: Revocation, introspection, userinfo

    public func revoke(_ value: String, kind: TokenKind) async throws(ProviderError) {
        var form = [("token", value)]
        if kind == .accessToken || kind == .refreshToken { form.append(("token_type_hint", kind.rawValue)) }
        _ = try await wire.exchange(
            .form(
                .revocation, try await endpoint(.revocation), form, clientID: configuration.clientID,
                authentication: configuration.authentication(for: .revocation), secrets: [value]))
    }

    public func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection {
        var form = [("token", value)]
        if kind == .accessToken || kind == .refreshToken { form.append(("token_type_hint", kind.rawValue)) }
        let fields = try await wire.json(
            .form(
                .introspection, try await endpoint(.introspection), form, clientID: configuration.clientID,
                authentication: configuration.authentication(for: .introspection), secrets: [value]))
        guard case .bool(let active) = fields["active"] else {
            throw ProviderError(.invalidResponse, endpoint: .introspection, reason: "The answer has no active field.")
        }
        return Introspection(active: active, fields: fields)
    }

    public func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        try await wire.json(.get(.userinfo, try await endpoint(.userinfo), bearer: accessToken))
    }

    /// The user's claims, with a DPoP proof when the access token is bound to the account's key.
    public func userInfo(for token: Token) async throws(ProviderError) -> [String: JSONValue] {
        guard let accessToken = token.accessToken else {
            throw ProviderError(.unsupported, endpoint: .userinfo, reason: "The credential has no access token.")
        }
        var request = try ProviderRequest.get(.userinfo, try await endpoint(.userinfo), bearer: accessToken)
        if token.tokenType.lowercased() == "dpop" { request.proof = try proof(for: token, carrying: accessToken) }
        return try await wire.json(request)
    }

    // MARK: Sign-out

    /// Global sign-out through the provider's own endpoint (Latchkey's development provider
    /// advertises one as `latchkey_global_signout_endpoint`). Providers without one throw
    /// ``ProviderError/Code/unsupported``.
    public func globalSignOut(accessToken: String) async throws(ProviderError) {
        try await globalSignOut(for: Token(accessToken: accessToken, issuedAt: now(), provider: identity))
    }

    /// Global sign-out with `token`'s access token, and a DPoP proof when it is bound.
    public func globalSignOut(for token: Token) async throws(ProviderError) {
        guard let accessToken = token.accessToken else {
            throw ProviderError(.unsupported, endpoint: .globalSignOut, reason: "Nothing to sign out with.")
        }
        let url: URL
        do {
            url = try await endpoint(.globalSignOut)
        } catch  where error.code == .missingEndpoint {
            throw ProviderError(
                .unsupported, endpoint: .globalSignOut, reason: "The provider has no global sign-out endpoint.")
        }
        var request = try ProviderRequest.form(
            .globalSignOut, url, [], clientID: configuration.clientID, authentication: nil, bearer: accessToken)
        if token.tokenType.lowercased() == "dpop" { request.proof = try proof(for: token, carrying: accessToken) }
        _ = try await wire.exchange(request)
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
        guard let url = components?.url else {
            throw ProviderError(.invalidResponse, endpoint: .endSession, reason: "The end-session URL is not valid.")
        }
        let request = ProviderRequest(
            .endSession, try HTTPRequest.checked(.get, url, endpoint: .endSession), secrets: [idToken].compactMap { $0 }
        )
        let answer = try await wire.send(request)
        switch answer.response.status.code {
        case 200..<300: return nil
        case 300..<400: return url
        default: throw wire.refusal(request, answer, now())
        }
    }

    /// The URL that ends the user's session at the provider in a browser (RP-Initiated Logout
    /// 1.0 §2): the end-session endpoint with `id_token_hint`, `client_id`, and
    /// `post_logout_redirect_uri` with `state` when given; `nil` when the provider has none.
    public func endSessionURL(idTokenHint: String?, postLogoutRedirectURI: URL?, state: String? = nil)
        async throws(ProviderError) -> URL?
    {
        let base: URL
        do {
            base = try await endpoint(.endSession)
        } catch  where error.code == .missingEndpoint {
            return nil
        }
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)
        var items = components?.queryItems ?? []
        if let idTokenHint { items.append(URLQueryItem(name: "id_token_hint", value: idTokenHint)) }
        items.append(URLQueryItem(name: "client_id", value: configuration.clientID))
        if let postLogoutRedirectURI {
            items.append(URLQueryItem(name: "post_logout_redirect_uri", value: postLogoutRedirectURI.absoluteString))
            if let state { items.append(URLQueryItem(name: "state", value: state)) }
        }
        components?.queryItems = items
        return components?.url
    }

    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3).
    package static func retryAfter(_ value: String, now: Date = Date()) -> Duration? {
        ProviderWire.retryAfter(value, now: now)
    }
}
