public import Foundation
import HTTPTypes
import JWTKit
public import Logging

/// How to reach an Amazon Cognito user pool as one app client.
public struct CognitoConfiguration: Sendable, Hashable {
    /// The AWS region, e.g. `us-east-1`.
    public var region: String
    /// The user pool id, e.g. `us-east-1_AbCdEf`.
    public var userPoolID: String
    /// The app client id.
    public var clientID: String
    /// Where the Cognito API is: `https://cognito-idp.REGION.amazonaws.com/` unless set (an
    /// emulator on loopback, say).
    public var endpoint: URL?
    /// The hosted UI domain, e.g. `https://myapp.auth.us-east-1.amazoncognito.com`, for ending
    /// the browser session.
    public var hostedUIDomain: URL?
    /// The sign-out URL registered with the app client, sent as `logout_uri`.
    public var logoutURI: URL?
    /// Clock skew tolerated on ID token times, in seconds.
    public var leeway: TimeInterval
    /// Limits of every request.
    public var requestOptions: HTTPTransportOptions

    /// Creates a configuration.
    public init(
        region: String, userPoolID: String, clientID: String, endpoint: URL? = nil, hostedUIDomain: URL? = nil,
        logoutURI: URL? = nil, leeway: TimeInterval = 60, requestOptions: HTTPTransportOptions = HTTPTransportOptions()
    ) {
        self.region = region
        self.userPoolID = userPoolID
        self.clientID = clientID
        self.endpoint = endpoint
        self.hostedUIDomain = hostedUIDomain
        self.logoutURI = logoutURI
        self.leeway = leeway
        self.requestOptions = requestOptions
    }

    /// The pool's issuer, as its tokens name it.
    public var issuer: String { "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)" }

    var apiURL: URL? { endpoint ?? URL(string: "https://cognito-idp.\(region).amazonaws.com/") }
}

/// Amazon Cognito user pools over their own wire API (AWS JSON 1.1, no AWS SDK):
/// `InitiateAuth` (USER_PASSWORD_AUTH, REFRESH_TOKEN_AUTH), `GetUser`, `GlobalSignOut`,
/// `RevokeToken`, and the hosted UI's logout URL. Errors are mapped by `__type`;
/// `NotAuthorizedException` on refresh means the session is over (sign in again).
public actor CognitoProvider: IdentityProvider {
    /// How the pool is reached.
    public nonisolated let configuration: CognitoConfiguration
    /// The issuer and client of the pool's tokens.
    public nonisolated let identity: ProviderIdentity
    let transport: any HTTPTransport
    let logger: Logger
    let now: @Sendable () -> Date
    private var keySet: JWKSCache<ContinuousClock>?

    /// Creates a provider.
    public init(
        configuration: CognitoConfiguration, transport: any HTTPTransport, logger: Logger? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.identity = ProviderIdentity(issuer: configuration.issuer, clientID: configuration.clientID)
        self.transport = transport
        self.logger = logger ?? .disabled("latchkey.cognito")
        self.now = now
    }

    /// Cognito revokes access tokens together with their refresh token, never one by one.
    public nonisolated var revocableKinds: Set<TokenKind> { [.refreshToken] }

    public func supportsGlobalSignOut() async throws(ProviderError) -> Bool { true }

    // MARK: Sign-in and refresh

    /// Signs in with `USER_PASSWORD_AUTH` and stores the credential.
    public func signIn(
        username: String, password: String, into store: CredentialStore, tags: [String: String] = [:],
        makeDefault: Bool = false
    ) async throws(ProviderError) -> Credential {
        let token = try await passwordToken(username: username, password: password)
        await store.register(self)
        do {
            let stored = try await store.add(token, tags: tags, makeDefault: makeDefault)
            return await credential(stored.id, in: store)
        } catch {
            throw .storage(error)
        }
    }

    /// The live handle of a stored credential; shared, so concurrent callers share one refresh.
    public func credential(_ id: CredentialID, in store: CredentialStore) async -> Credential {
        await store.credential(id, provider: self, clock: now)
    }

    /// The tokens of a `USER_PASSWORD_AUTH` sign-in, not stored.
    public func passwordToken(username: String, password: String) async throws(ProviderError) -> Token {
        let answer = try await call(
            "InitiateAuth",
            [
                "AuthFlow": .string("USER_PASSWORD_AUTH"), "ClientId": .string(configuration.clientID),
                "AuthParameters": .object(["USERNAME": .string(username), "PASSWORD": .string(password)]),
            ], secrets: [password])
        return try await token(from: answer, previous: nil)
    }

    /// Fetches the pool's JWKS before a refresh, so a new ID token can be verified once the
    /// answer is stored.
    public func prepareRefresh(of token: Token) async throws(ProviderError) {
        _ = try await jwks(refetch: false)
    }

    public func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> Token {
        guard let refreshToken = token.refreshToken else {
            throw ProviderError(.signInRequired, endpoint: .token, reason: "The credential has no refresh token.")
        }
        do {
            let answer = try await call(
                "InitiateAuth",
                [
                    "AuthFlow": .string("REFRESH_TOKEN_AUTH"), "ClientId": .string(configuration.clientID),
                    "AuthParameters": .object(["REFRESH_TOKEN": .string(refreshToken)]),
                ], secrets: [refreshToken])
            return try await self.token(from: answer, previous: token, verifyingIDToken: false)
        } catch {
            if error.oauthError == "NotAuthorizedException" {
                throw ProviderError(
                    .signInRequired, endpoint: .token, reason: "Cognito rejected the refresh token; sign in again.",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status)
            }
            throw error
        }
    }

    public func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {
        guard let idToken = refreshed.idToken, let accessToken = refreshed.accessToken else { return }
        let subject = previous.idToken.flatMap(UnverifiedClaims.read)?["sub"]?.stringValue
        try await verifyIDToken(idToken, accessToken: accessToken, subject: subject)
    }

    private func token(from answer: [String: JSONValue], previous: Token?, verifyingIDToken: Bool = true)
        async throws(ProviderError) -> Token
    {
        guard case .object(let result) = answer["AuthenticationResult"],
            let accessToken = result["AccessToken"]?.stringValue
        else {
            throw ProviderError(
                .unsupported, endpoint: .token,
                reason:
                    "Cognito asked for a challenge (\(answer["ChallengeName"]?.stringValue ?? "unknown")), which Latchkey does not answer."
            )
        }
        let idToken = result["IdToken"]?.stringValue
        if verifyingIDToken, let idToken {
            let previousSubject = previous?.idToken.flatMap(UnverifiedClaims.read)?["sub"]?.stringValue
            try await verifyIDToken(idToken, accessToken: accessToken, subject: previousSubject)
        }
        let issued = now()
        return Token(
            accessToken: accessToken, tokenType: result["TokenType"]?.stringValue ?? "Bearer",
            refreshToken: result["RefreshToken"]?.stringValue ?? previous?.refreshToken,
            idToken: idToken ?? previous?.idToken, scopes: previous?.scopes, issuedAt: issued,
            expiresAt: result["ExpiresIn"]?.doubleValue.map {
                issued.addingTimeInterval(ProviderNumbers.seconds($0, fallback: 0))
            }, provider: identity)
    }

    private func verifyIDToken(_ idToken: String, accessToken: String, subject: String?) async throws(ProviderError) {
        let verifier = IDTokenVerifier(
            issuer: configuration.issuer, clientID: configuration.clientID, leeway: configuration.leeway)
        // Fetched first, so an unreachable JWKS is a (retryable) network failure, not a rejection.
        _ = try await jwks(refetch: false)
        do {
            _ = try await verifier.verify(
                idToken, accessToken: accessToken, subject: subject, now: now(),
                keys: { refetch in try await self.jwks(refetch: refetch) })
        } catch {
            throw ProviderError(
                .idTokenRejected, endpoint: .token, reason: "The ID token was rejected.", underlying: error)
        }
    }

    private func jwks(refetch: Bool) async throws(ProviderError) -> JWKS {
        if let keySet { return try await keySet.keys(refetch: refetch) }
        let cache = JWKSCache(clock: ContinuousClock()) { () async throws(ProviderError) -> JWKS in
            try await self.fetchJWKS()
        }
        keySet = cache
        return try await cache.keys(refetch: refetch)
    }

    private func fetchJWKS() async throws(ProviderError) -> JWKS {
        let base = configuration.endpoint.map {
            $0.absoluteString.hasSuffix("/") ? $0.absoluteString : $0.absoluteString + "/"
        }
        let text =
            base.map { "\($0)\(configuration.userPoolID)/.well-known/jwks.json" }
            ?? "\(configuration.issuer)/.well-known/jwks.json"
        guard let url = URL(string: text), EndpointSecurity.isAcceptable(url) else {
            throw ProviderError(.insecureEndpoint, endpoint: .jwks, reason: "The JWKS URL is not https.")
        }
        let answer: HTTPTransportResponse
        do {
            answer = try await transport.send(
                HTTPRequest(method: .get, url: url), body: nil, options: configuration.requestOptions)
        } catch {
            throw ProviderError.transport(error, endpoint: .jwks)
        }
        guard answer.response.status.code == 200, let set = try? JSONDecoder().decode(JWKS.self, from: answer.body)
        else {
            throw ProviderError(.invalidResponse, endpoint: .jwks, reason: "The pool's JWKS could not be read.")
        }
        return set
    }

    // MARK: Revocation, user, sign-out

    /// `RevokeToken`: revokes a refresh token and the access tokens issued with it. Access
    /// tokens cannot be revoked alone (``ProviderError/Code/unsupported``).
    public func revoke(_ value: String, kind: TokenKind) async throws(ProviderError) {
        guard kind == .refreshToken else {
            throw ProviderError(
                .unsupported, endpoint: .revocation,
                reason: "Cognito revokes access tokens only together with their refresh token.")
        }
        _ = try await call(
            "RevokeToken", ["Token": .string(value), "ClientId": .string(configuration.clientID)], secrets: [value],
            endpoint: .revocation)
    }

    /// `GetUser`: the user's attributes as claims (`sub`, `email`, …), plus `username`.
    public func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        let answer = try await call(
            "GetUser", ["AccessToken": .string(accessToken)], secrets: [accessToken], endpoint: .userinfo)
        var claims: [String: JSONValue] = [:]
        if case .array(let attributes) = answer["UserAttributes"] {
            for case .object(let attribute) in attributes {
                if let name = attribute["Name"]?.stringValue, let value = attribute["Value"] { claims[name] = value }
            }
        }
        claims["username"] = answer["Username"]
        return claims
    }

    /// Cognito has no introspection; an access token is reported active when `GetUser` accepts it.
    public func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection {
        guard kind == .accessToken else {
            throw ProviderError(.unsupported, endpoint: .introspection, reason: "Cognito can only check access tokens.")
        }
        do {
            let claims = try await userInfo(accessToken: value)
            return Introspection(active: true, fields: claims)
        } catch {
            if error.oauthError == "NotAuthorizedException" { return Introspection(active: false) }
            throw error
        }
    }

    /// `GlobalSignOut`: every token of the user, on every device, is revoked.
    public func globalSignOut(accessToken: String) async throws(ProviderError) {
        _ = try await call(
            "GlobalSignOut", ["AccessToken": .string(accessToken)], secrets: [accessToken], endpoint: .globalSignOut)
    }

    /// The hosted UI's logout URL, which a browser must open (it revokes no token by itself).
    public func endSession(idToken: String?) async throws(ProviderError) -> URL? {
        guard let domain = configuration.hostedUIDomain,
            var components = URLComponents(url: domain.appendingPathComponent("logout"), resolvingAgainstBaseURL: false)
        else {
            throw ProviderError(.unsupported, endpoint: .endSession, reason: "No hosted UI domain is configured.")
        }
        components.queryItems = [URLQueryItem(name: "client_id", value: configuration.clientID)]
        if let logoutURI = configuration.logoutURI {
            components.queryItems?.append(URLQueryItem(name: "logout_uri", value: logoutURI.absoluteString))
        }
        return components.url
    }

    // MARK: Wire

    /// Calls a Cognito operation: `POST /` with `X-Amz-Target` and an AWS JSON 1.1 body.
    func call(
        _ operation: String, _ body: [String: JSONValue], secrets: [String], endpoint kind: EndpointKind = .token
    ) async throws(ProviderError) -> [String: JSONValue] {
        guard let url = configuration.apiURL, EndpointSecurity.isAcceptable(url) else {
            throw ProviderError(.insecureEndpoint, endpoint: kind, reason: "The Cognito endpoint is not https.")
        }
        var request = HTTPRequest(method: .post, url: url)
        if let type = HTTPField.Name("Content-Type") { request.headerFields[type] = "application/x-amz-json-1.1" }
        if let target = HTTPField.Name("X-Amz-Target") {
            request.headerFields[target] = "AWSCognitoIdentityProviderService.\(operation)"
        }
        let data: Data
        do {
            data = try JSONEncoder().encode(body)
        } catch {
            throw ProviderError(.invalidResponse, endpoint: kind, reason: "The request could not be encoded.")
        }
        logger.trace("calling Cognito", metadata: ["operation": "\(operation)", "host": "\(url.host ?? "")"])
        let answer: HTTPTransportResponse
        do {
            answer = try await transport.send(request, body: data, options: configuration.requestOptions)
        } catch {
            let failure = ProviderError.transport(error, endpoint: kind)
            logger.debug("Cognito call failed", metadata: ["operation": "\(operation)", "error": "\(failure)"])
            throw failure
        }
        let status = answer.response.status.code
        logger.debug("Cognito answered", metadata: ["operation": "\(operation)", "status": "\(status)"])
        let fields = (try? JSONDecoder().decode([String: JSONValue].self, from: answer.body)) ?? [:]
        guard (200..<300).contains(status) else {
            // `__type` may carry a namespace ("com.amazonaws...#NotAuthorizedException").
            let type = fields["__type"]?.stringValue.map { String($0.split(separator: "#").last ?? Substring($0)) }
            var message = (fields["message"] ?? fields["Message"])?.stringValue
            for secret in secrets where !secret.isEmpty {
                message = message?.replacingOccurrences(of: secret, with: "<redacted>")
            }
            let retryAfter = answer.response.headerFields[.retryAfter].flatMap(OpenIDProvider.retryAfter)
            let throttled = type == "TooManyRequestsException" || type == "InternalErrorException"
            throw ProviderError(
                type == nil ? .httpStatus : .oauth, endpoint: kind, reason: "Cognito refused \(operation).",
                oauthError: type.map(OAuthErrorCode.init(rawValue:)),
                errorDescription: message.map { String($0.prefix(300)) },
                status: throttled ? max(status, 500) : status, retryAfter: retryAfter)
        }
        return fields
    }
}
