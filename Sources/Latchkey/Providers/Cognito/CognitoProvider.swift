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
    /// Whether the app client rotates refresh tokens (AWS's `RefreshTokenRotationType`): then
    /// a refresh goes through `GetTokensFromRefreshToken` and stores the new refresh token it
    /// returns. `nil` (the default) finds out: `REFRESH_TOKEN_AUTH` first, and
    /// `GetTokensFromRefreshToken` from then on once Cognito refuses it for rotation.
    public var refreshTokenRotation: Bool?
    /// `ClientMetadata` sent with `GetTokensFromRefreshToken`, for the pool's Lambda triggers.
    public var refreshClientMetadata: [String: String]

    /// Creates a configuration.
    public init(
        region: String, userPoolID: String, clientID: String, endpoint: URL? = nil, hostedUIDomain: URL? = nil,
        logoutURI: URL? = nil, leeway: TimeInterval = 60, requestOptions: HTTPTransportOptions = HTTPTransportOptions(),
        refreshTokenRotation: Bool? = nil, refreshClientMetadata: [String: String] = [:]
    ) {
        self.region = region
        self.userPoolID = userPoolID
        self.clientID = clientID
        self.endpoint = endpoint
        self.hostedUIDomain = hostedUIDomain
        self.logoutURI = logoutURI
        self.leeway = leeway
        self.requestOptions = requestOptions
        self.refreshTokenRotation = refreshTokenRotation
        self.refreshClientMetadata = refreshClientMetadata
    }

    /// The pool's issuer, as its tokens name it.
    public var issuer: String { "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)" }

    var apiURL: URL? { endpoint ?? URL(string: "https://cognito-idp.\(region).amazonaws.com/") }
}

/// Amazon Cognito user pools over their own wire API (AWS JSON 1.1, no AWS SDK):
/// `InitiateAuth` (USER_PASSWORD_AUTH, REFRESH_TOKEN_AUTH), `GetTokensFromRefreshToken` (for app
/// clients that rotate refresh tokens), `GetUser`, `GlobalSignOut`,
/// `RevokeToken`, and the hosted UI's logout URL. Errors are mapped by `__type`;
/// `NotAuthorizedException` on refresh means the session is over (sign in again).
public actor CognitoProvider: IdentityProvider {
    /// How the pool is reached.
    public nonisolated let configuration: CognitoConfiguration
    /// The issuer and client of the pool's tokens.
    public nonisolated let identity: ProviderIdentity
    let transport: any HTTPTransport
    let logger: Logger
    let wire: ProviderWire
    /// The time the provider goes by: token dates and ID-token checks.
    public nonisolated let clock: any LatchkeyClock
    var idTokenChecks: IDTokenChecks?
    /// Whether the app client was found to rotate refresh tokens (see
    /// ``CognitoConfiguration/refreshTokenRotation``).
    var rotatesRefreshTokens: Bool?
    /// The pool's key set, kept in the store it is registered with.
    nonisolated let documents: ProviderDocuments

    /// Creates a provider.
    public init(
        configuration: CognitoConfiguration, transport: any HTTPTransport, logger: Logger? = nil,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.configuration = configuration
        self.identity = ProviderIdentity(issuer: configuration.issuer, clientID: configuration.clientID)
        self.transport = transport
        self.logger = logger ?? .disabled("latchkey.cognito")
        self.wire = ProviderWire(
            transport: transport, options: configuration.requestOptions, logger: self.logger, clock: clock,
            refusal: Self.refusal)
        self.clock = clock
        self.documents = ProviderDocuments(logger: self.logger)
    }

    /// The current date, by the provider's clock.
    nonisolated func now() -> Date { clock.date }

    /// Cognito revokes access tokens together with their refresh token, never one by one.
    public nonisolated var revocableKinds: Set<TokenKind> { [.refreshToken] }

    public func supportsGlobalSignOut() async throws(ProviderError) -> Bool { true }

    // MARK: Sign-in and refresh

    /// Signs in with `USER_PASSWORD_AUTH` and stores the credential.
    public func signIn(
        username: String, password: String, into store: CredentialStore, tags: [String: String] = [:],
        makeDefault: Bool = false
    ) async throws(ProviderError) -> Credential {
        let token = try await store.capabilities.sharing { () async throws(ProviderError) in
            try await passwordToken(username: username, password: password)
        }
        return try await self.store(token, in: store, tags: tags, makeDefault: makeDefault)
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
        _ = try await idTokens.keys.keys()
    }

    public func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {
        guard let idToken = refreshed.idToken, let accessToken = refreshed.accessToken else { return }
        _ = try await idTokens.verify(
            idToken, issuer: configuration.issuer, accessToken: accessToken,
            subject: IDTokenChecks.subject(of: previous),
            now: now())
    }

    func token(from answer: [String: JSONValue], previous: Token?, verifyingIDToken: Bool = true)
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
        guard TokenResponse.isB64Token(accessToken) else {
            let reason =
                "Cognito's answer was refused: its AccessToken holds characters a token may not hold (RFC 6750)."
            guard previous != nil else {
                // A sign-in's grant that will not be kept is revoked, not left alive.
                let refused = Token(
                    accessToken: accessToken, refreshToken: result["RefreshToken"]?.stringValue, issuedAt: now(),
                    provider: identity)
                await discard(refused, logger: logger)
                throw ProviderError(.invalidResponse, endpoint: .token, reason: reason)
            }
            throw RotatedRefreshToken.refusal(
                .invalidResponse, reason: reason, fields: ["refresh_token": result["RefreshToken"] ?? .null],
                underlying: nil)
        }
        let idToken = result["IdToken"]?.stringValue
        let issued = now()
        let token = Token(
            accessToken: accessToken, tokenType: result["TokenType"]?.stringValue ?? "Bearer",
            refreshToken: result["RefreshToken"]?.stringValue ?? previous?.refreshToken,
            idToken: idToken ?? previous?.idToken, scopes: previous?.scopes, issuedAt: issued,
            expiresAt: result["ExpiresIn"]?.doubleValue.map {
                issued.addingTimeInterval(ProviderNumbers.seconds($0, fallback: 0))
            }, provider: identity)
        if verifyingIDToken, let idToken {
            do {
                _ = try await idTokens.verify(
                    idToken, issuer: configuration.issuer, accessToken: accessToken,
                    subject: IDTokenChecks.subject(of: previous), now: now())
            } catch {
                // A sign-in's grant that will not be kept is revoked, not left alive.
                if previous == nil { await discard(token, logger: logger) }
                throw error
            }
        }
        return token
    }

    /// Fetches the pool's key set again, and keeps it in the calling store.
    public func fetchPublishedDocuments() async throws(ProviderError) {
        _ = try await idTokens.keys.keys(refetch: true)
    }

    /// The pool's key set: the store's copy while it is valid (and newer than `newerThan`), else
    /// fetched and kept there (see ``ProviderDocuments``).
    func fetchJWKS(newerThan: Date?) async throws(ProviderError) -> JWKSCache.Fetched {
        let base = configuration.endpoint.map {
            $0.absoluteString.hasSuffix("/") ? $0.absoluteString : $0.absoluteString + "/"
        }
        let text =
            base.map { "\($0)\(configuration.userPoolID)/.well-known/jwks.json" }
            ?? "\(configuration.issuer)/.well-known/jwks.json"
        guard let url = URL(string: text) else {
            throw ProviderError(.insecureEndpoint, endpoint: .jwks, reason: "The JWKS URL is not valid.")
        }
        return try await documents.keySet(at: url, now: clock.date, newerThan: newerThan, through: wire)
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
            if (error.underlying as? CognitoError)?.kind == .notAuthorized { return Introspection(active: false) }
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

    /// Calls a Cognito operation: `POST /` with `X-Amz-Target` and an AWS JSON 1.1 body. A refusal
    /// becomes a ``ProviderError`` whose underlying ``CognitoError`` names Cognito's error type.
    func call(
        _ operation: String, _ body: [String: JSONValue], secrets: [String], endpoint kind: EndpointKind = .token
    ) async throws(ProviderError) -> [String: JSONValue] {
        guard let url = configuration.apiURL else {
            throw ProviderError(.insecureEndpoint, endpoint: kind, reason: "The Cognito endpoint is not valid.")
        }
        let headers = HTTPField.Name("X-Amz-Target").map { [$0: "AWSCognitoIdentityProviderService.\(operation)"] }
        let answer = try await wire.exchange(
            .json(
                kind, url, .object(body), contentType: "application/x-amz-json-1.1", headers: headers ?? [:],
                secrets: secrets, operation: operation))
        return ProviderWire.object(answer.body) ?? [:]
    }

    /// Cognito's refusal: its `__type` (which may carry a namespace,
    /// `com.amazonaws…#NotAuthorizedException`) and message, as a ``CognitoError``.
    static func refusal(_ request: ProviderRequest, _ answer: HTTPTransportResponse, now: Date) -> ProviderError {
        let (operation, kind, secrets) = (request.operation ?? "the request", request.endpoint, request.secrets)
        let fields = ProviderWire.object(answer.body) ?? [:]
        let message = ProviderWire.redact(
            (fields["message"] ?? fields["Message"])?.stringValue, removing: secrets, limit: 300)
        let type = ProviderWire.redact(fields["__type"]?.stringValue, removing: secrets, limit: 100)
            .map { String($0.split(separator: "#").last ?? Substring($0)) }
        var error = ProviderError(
            .httpStatus, endpoint: kind, reason: "Cognito refused \(operation).", errorDescription: message,
            status: answer.response.status.code, retryAfter: ProviderWire.retryAfter(answer, now: now),
            underlying: type.map {
                CognitoError(kind: CognitoError.Kind(rawValue: $0), message: message, operation: operation)
            })
        if let cognito = error.underlying as? CognitoError {
            // Cognito throttles and fails with 400: its type says whether to try again.
            error.retryableByProvider = cognito.kind.isTransient
            // A refused access token on GetUser, GlobalSignOut and the like.
            error.tokenRejectedByProvider = cognito.kind == .notAuthorized && kind != .token
        }
        return error
    }
}

extension CognitoProvider: ChecksIDTokens {
    nonisolated var idTokenClientID: String { configuration.clientID }
    /// Cognito signs with RS256: the default allow-list.
    nonisolated var idTokenAlgorithms: Set<JWSAlgorithm> { IDTokenVerifier.defaultAlgorithms }
    nonisolated var idTokenLeeway: TimeInterval { configuration.leeway }
}
