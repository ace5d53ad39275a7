import Foundation
import HTTPTypes
import Hummingbird

/// The provider's HTTP endpoints over its state.
struct Endpoints: Sendable {
    let state: ProviderState
    let journeys: JourneyState
    let faults: DevProviderFaults
    let configuration: DevProviderConfiguration

    /// The issuer a request is for: the root one, or the Ping realm's.
    func issuer(_ context: ProviderContext) async -> String {
        await state.issuer + context.issuerPath
    }

    /// The discovery key under which the global sign-out endpoint is advertised. It is not a
    /// standard: a client must know it to use it.
    static let globalSignOutKey = "latchkey_global_signout_endpoint"

    // MARK: Discovery (OpenID Connect Discovery 1.0, RFC 8414)

    /// The OpenID configuration: the metadata, less what the configuration leaves out of it.
    func openIDConfiguration(_ request: Request, _ context: ProviderContext) async throws -> Response {
        try await discovery(omitting: configuration.omittedFromOpenIDConfiguration, request: request, context: context)
    }

    /// The RFC 8414 authorization-server metadata: all of it.
    func authorizationServerMetadata(_ request: Request, _ context: ProviderContext) async throws -> Response {
        try await discovery(omitting: [], request: request, context: context)
    }

    /// The metadata of the issuer the request is for. The Ping realm's issuer has what AM's
    /// has: no device flow and no global sign-out.
    private func discovery(omitting omitted: [String], request: Request, context: ProviderContext) async throws
        -> Response
    {
        let issuer = await issuer(context)
        func url(_ endpoint: DevProviderEndpoint) -> String { issuer + endpoint.path }
        var omitted = omitted
        if !context.issuerPath.isEmpty {
            omitted += ["device_authorization_endpoint", Self.globalSignOutKey]
        }
        if !context.issuerPath.isEmpty || !configuration.clientRegistration { omitted.append("registration_endpoint") }
        let metadata: [String: Any] = [
            "issuer": issuer,
            "authorization_endpoint": url(.authorization),
            "token_endpoint": url(.token),
            "jwks_uri": url(.jwks),
            "userinfo_endpoint": url(.userinfo),
            "revocation_endpoint": url(.revocation),
            "introspection_endpoint": url(.introspection),
            "end_session_endpoint": url(.endSession),
            "backchannel_logout_supported": true,
            "backchannel_logout_session_supported": true,
            "device_authorization_endpoint": url(.deviceAuthorization),
            "registration_endpoint": url(.registration),
            Self.globalSignOutKey: url(.globalSignOut),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": DevProviderConfiguration.allGrantTypes.filter {
                context.issuerPath.isEmpty || !$0.hasSuffix("device_code")
            },
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "scopes_supported": configuration.offeredScopes,
            "claims_supported": [
                "iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "sid", "azp", "at_hash", "preferred_username",
                "name", "email", "email_verified",
            ],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "dpop_signing_alg_values_supported": ["ES256"],
            "prompt_values_supported": ["none", "login", "consent"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "frontchannel_logout_supported": false,
        ]
        return Reply.document(
            metadata.filter { !omitted.contains($0.key) }, maxAge: configuration.documentMaxAge,
            modified: state.started, request: request)
    }

    func jwks(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let set = await state.keys.jwks(now: await state.currentDate)
        let extra = await state.extraKeySetEntries
        var object: [String: Any] = [:]
        if let data = try? JSONEncoder().encode(set),
            let decoded = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        {
            object = decoded
        }
        if !extra.isEmpty {
            let entries = extra.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
            object["keys"] = (object["keys"] as? [Any] ?? []) + entries
        }
        return Reply.document(
            object, contentType: "application/jwk-set+json", maxAge: configuration.documentMaxAge,
            modified: state.started, request: request)
    }

    // MARK: Token endpoint (RFC 6749 §3.2, RFC 8628 §3.4)

    func token(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let (form, client) = try await clientRequest(request, to: "The token endpoint")
        let grantType = try form.required("grant_type")
        faults.increment("token.\(grantType)")
        guard DevProviderConfiguration.allGrantTypes.contains(grantType) else {
            throw OAuthFailure("unsupported_grant_type", "The grant type \(grantType) is not supported.")
        }
        guard client.grantTypes.contains(grantType) else {
            throw OAuthFailure.unauthorizedClient("The client may not use the grant type \(grantType).")
        }
        let jkt = try await proofThumbprint(request, context, endpoint: .token, refusal: \.atTokenEndpoint)
        let answer: ProviderState.TokenAnswer
        let issuer = await issuer(context)
        switch grantType {
        case "authorization_code":
            answer = try await state.exchangeCode(
                try form.required("code"), client: client, redirectURI: try form["redirect_uri"],
                verifier: try form["code_verifier"], issuer: issuer, jkt: jkt, audience: try Self.audience(form))
        case "refresh_token":
            let scopes = try form["scope"].map(Self.scopes)
            let resource = try Self.checked(resource: try form["resource"])
            answer = try await state.refresh(
                try form.required("refresh_token"), client: client, scopes: scopes, issuer: issuer, jkt: jkt,
                resource: resource)
        case "password":
            let scopes = try validScopes(try form["scope"], client: client)
            answer = try await state.passwordGrant(
                client: client, username: try form.required("username"), password: try form.required("password"),
                scopes: scopes, issuer: issuer, jkt: jkt, audience: try Self.audience(form))
        default:
            guard context.issuerPath.isEmpty else {
                throw OAuthFailure("unsupported_grant_type", "The realm has no device flow.")
            }
            answer = try await state.pollDevice(try form.required("device_code"), client: client, jkt: jkt)
        }
        return await withDPoPNonce(Reply.json(answer.mapValues(Self.jsonValue)))
    }

    /// RFC 8707 §2: the audience of a sign-in's access token, the one resource its request
    /// names; none (a token for every resource) when it names none or several.
    static func audience(_ form: Parameters) throws -> String? {
        guard !form.repeated.contains("resource") else { return nil }
        return try checked(resource: try form["resource"])
    }

    /// `resource`, refused with `invalid_target` unless it is a resource indicator.
    static func checked(resource: String?) throws -> String? {
        if let resource, !isResourceIndicator(resource) {
            throw OAuthFailure("invalid_target", "The resource must be an absolute URI without a fragment.")
        }
        return resource
    }

    /// RFC 8707 §2: an absolute URI without a fragment.
    static func isResourceIndicator(_ text: String) -> Bool {
        guard let url = URLComponents(string: text), url.scheme?.isEmpty == false, !text.contains("#") else {
            return false
        }
        return url.host?.isEmpty == false
    }

    static func scopes(_ text: String) -> [String] {
        text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    }

    /// The scopes asked for (the client's when none are), refused when the client may not have them.
    func validScopes(_ text: String?, client: DevProviderConfiguration.Client) throws -> [String] {
        guard let text else { return client.scopes }
        let scopes = Self.scopes(text)
        let refused = scopes.filter { !client.scopes.contains($0) }
        guard refused.isEmpty else {
            throw OAuthFailure.invalidScope("Scope not allowed: \(refused.joined(separator: " ")).")
        }
        return scopes
    }

    // MARK: Revocation (RFC 7009) and introspection (RFC 7662)

    func revocation(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let (form, client) = try await clientRequest(request, to: "The revocation endpoint")
        let token = try form.required("token")
        _ = try form["token_type_hint"]  // a hint only: every kind of token is looked up
        try await state.revoke(token, client: client)
        return Response(status: .ok, headers: [.cacheControl: "no-store"])
    }

    func introspection(_ request: Request, _ context: ProviderContext) async throws -> Response {
        guard request.method == .post else {
            throw OAuthFailure.invalidRequest("The introspection endpoint takes POST.")
        }
        let form = try await Parameters.of(request)
        _ = try ClientAuthentication.authenticate(request, form, clients: state.clients, allowPublic: false)
        return Reply.json(await state.introspect(try form.required("token")).mapValues(Self.jsonValue))
    }

    // MARK: Userinfo (OpenID Connect Core §5.3) and global sign-out

    func userinfo(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let token = try await provenAccessToken(request, context, endpoint: .userinfo)
        let grant = try await state.authorize(accessToken: token)
        guard let user = configuration.user(named: grant.username) else {
            throw OAuthFailure.invalidToken("The access token is not valid.")
        }
        let claims = await state.profileClaims(user: user, scopes: grant.scopes)
        return await withDPoPNonce(Reply.json(claims.mapValues(Self.jsonValue)))
    }

    func globalSignOut(_ request: Request, _ context: ProviderContext) async throws -> Response {
        guard request.method == .post else { throw OAuthFailure.invalidRequest("Global sign-out takes POST.") }
        let grant = try await state.authorize(
            accessToken: try await provenAccessToken(request, context, endpoint: .globalSignOut))
        let ended = await state.signOutEverywhere(username: grant.username)
        await journeys.endAll(username: grant.username)
        await sendLogouts()
        return Reply.json(["sessions_ended": ended.sessions, "grants_revoked": ended.grants])
    }

    /// Ends every session of `username` (an administrator's request) and sends the logouts owed.
    func endSessions(of username: String) async -> Int {
        let ended = await state.signOutEverywhere(username: username)
        await journeys.endAll(username: username)
        await sendLogouts()
        return ended.sessions
    }

    /// Sends the back-channel logouts the sessions just ended owe their clients.
    func sendLogouts() async {
        await faults.backChannel.deliver(
            await state.takeLogoutNotices(), keys: state.keys, now: await state.currentDate)
    }

    /// The bearer token of the `Authorization` header (RFC 6750 §2.1).
    func bearerToken(_ request: Request) throws -> String {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer "),
            case let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces), !token.isEmpty
        else { throw OAuthFailure.invalidToken(nil) }
        return token
    }

    static func jsonValue(_ claim: Claim) -> Any {
        switch claim {
        case .string(let value): value
        case .number(let value): value
        case .decimal(let value): value
        case .strings(let value): value
        case .bool(let value): value
        case .object(let value): value.mapValues(jsonValue)
        }
    }

    // MARK: Device authorization (RFC 8628 §3.1)

    func deviceAuthorization(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let (form, client) = try await clientRequest(request, to: "Device authorization")
        guard client.grantTypes.contains("urn:ietf:params:oauth:grant-type:device_code") else {
            throw OAuthFailure.unauthorizedClient("The client may not use the device grant.")
        }
        let scopes = try validScopes(try form["scope"], client: client)
        let started = await state.startDeviceAuthorization(
            client: client, scopes: scopes, audience: try Self.audience(form))
        let verification = await state.issuer + DevProviderEndpoint.deviceVerification.path
        return Reply.json([
            "device_code": started.deviceCode, "user_code": started.userCode, "verification_uri": verification,
            "verification_uri_complete": Reply.url(verification, adding: [("user_code", started.userCode)]),
            "expires_in": started.expiresIn, "interval": started.interval,
        ])
    }
}
