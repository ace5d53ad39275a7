public import Foundation
public import JWTKit

/// Verifies OpenID Connect Back-Channel Logout tokens (§2.6): the signature through the
/// provider's JWKS with an algorithm from an allow-list; `typ` when it names a type (`JWT` is
/// taken as untyped, as Keycloak sends it); `iss`, `aud`, `iat`;
/// `exp` when present; the back-channel logout event; `sub` or `sid`; no `nonce`; a `jti`.
///
/// Two shapes are in use. Providers that follow the final specification send `exp` and
/// `typ: logout+jwt`. Others (Glewlwyd 2.7.5, which follows draft 06) send neither: such a token
/// is taken only while its `iat` is at most ``maximumAge`` old, so that a token captured once
/// cannot end sessions forever. Whether a `jti` was seen before is the caller's check, against a
/// cache every instance shares.
public struct LogoutTokenVerifier: Sendable {
    /// The event a logout token carries in `events`.
    public static let event = "http://schemas.openid.net/event/backchannel-logout"

    /// The issuer the token must name.
    public var issuer: String
    /// The client the token must be for.
    public var clientID: String
    /// The accepted algorithms (HMAC and `none` are removed even if listed).
    public var algorithms: Set<JWSAlgorithm>
    /// Clock skew tolerated on `exp` and `iat`.
    public var leeway: TimeInterval
    /// How old a token without `exp` may be, by its `iat`, in seconds.
    public var maximumAge: TimeInterval

    /// Creates a verifier.
    public init(
        issuer: String, clientID: String, algorithms: Set<JWSAlgorithm> = IDTokenVerifier.defaultAlgorithms,
        leeway: TimeInterval = 60, maximumAge: TimeInterval = 120
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.algorithms = algorithms.filter(\.isAcceptable)
        self.leeway = leeway
        self.maximumAge = maximumAge
    }

    /// Verifies `token` at `now` with the provider's key set, which `keys` gives (called again
    /// with `true` once when the token's `kid` is unknown).
    public func verify(_ token: String, now: Date, keys: @Sendable (_ refetch: Bool) async throws -> JWKS)
        async throws(LogoutTokenError) -> LogoutTokenClaims
    {
        let parsed: (header: JWTHeader, payload: IDTokenPayload)
        do {
            parsed = try await SignedJWT.verify(
                token, issuer: issuer, clientID: clientID, algorithms: algorithms, keys: keys)
        } catch {
            throw LogoutTokenError(error)
        }
        // Untyped (no `typ`, or the generic `JWT` that Keycloak and others send), or explicitly a
        // logout token; any other type (`at+jwt`, say) is another kind of token.
        if let type = parsed.header.typ?.lowercased(),
            !["jwt", "logout+jwt", "application/logout+jwt"].contains(type)
        {
            throw LogoutTokenError(.wrongType)
        }
        let payload = parsed.payload
        let claims = payload.all
        guard let issuedAt = payload.issuedAt?.value, issuedAt <= now.addingTimeInterval(leeway) else {
            throw LogoutTokenError(.issuedInFuture)
        }
        if let expiration = payload.expiration?.value {
            guard now < expiration.addingTimeInterval(leeway) else { throw LogoutTokenError(.expired) }
        } else {
            guard now.timeIntervalSince(issuedAt) <= maximumAge + leeway else { throw LogoutTokenError(.tooOld) }
        }
        guard case .object(let events)? = claims["events"], case .object? = events[Self.event] else {
            throw LogoutTokenError(.missingEvent)
        }
        guard claims["sub"]?.stringValue != nil || claims["sid"]?.stringValue != nil else {
            throw LogoutTokenError(.noSubjectOrSession)
        }
        guard claims["nonce"] == nil else { throw LogoutTokenError(.containsNonce) }
        guard let id = claims["jti"]?.stringValue, !id.isEmpty else { throw LogoutTokenError(.missingID) }
        return LogoutTokenClaims(all: claims)
    }
}
