public import Foundation
public import JWTKit

/// Why a logout token was refused. Its description names the check that failed, never the token.
public struct LogoutTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which check failed.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformed, tooLarge, algorithmNotAllowed, unknownKey, invalidSignature, wrongType, issuerMismatch,
                audienceMismatch, expired, issuedInFuture, tooOld, missingEvent, noSubjectOrSession, containsNonce,
                missingID, keysUnavailable
        }

        private let base: Base

        /// Not a compact JWS with a JSON header and payload.
        public static let malformed = Reason(base: .malformed)
        /// Larger than ``IDTokenVerifier/maximumLength``.
        public static let tooLarge = Reason(base: .tooLarge)
        /// `alg` is not on the allow-list (`none` and HMAC never are), or does not fit the key.
        public static let algorithmNotAllowed = Reason(base: .algorithmNotAllowed)
        /// No key in the provider's JWKS has the token's `kid`, even after fetching it again.
        public static let unknownKey = Reason(base: .unknownKey)
        /// The signature does not verify.
        public static let invalidSignature = Reason(base: .invalidSignature)
        /// The header's `typ` names another kind of token (`at+jwt`, say): neither `logout+jwt` nor
        /// the generic `JWT` of untyped tokens.
        public static let wrongType = Reason(base: .wrongType)
        /// `iss` is not the provider's issuer.
        public static let issuerMismatch = Reason(base: .issuerMismatch)
        /// `aud` does not contain the client id.
        public static let audienceMismatch = Reason(base: .audienceMismatch)
        /// `exp` has passed (beyond the leeway).
        public static let expired = Reason(base: .expired)
        /// `iat` is missing, or in the future (beyond the leeway).
        public static let issuedInFuture = Reason(base: .issuedInFuture)
        /// A token without `exp` whose `iat` is older than ``LogoutTokenVerifier/maximumAge``.
        public static let tooOld = Reason(base: .tooOld)
        /// `events` does not hold the back-channel logout event.
        public static let missingEvent = Reason(base: .missingEvent)
        /// Neither `sub` nor `sid`: nothing says whose sessions end.
        public static let noSubjectOrSession = Reason(base: .noSubjectOrSession)
        /// A `nonce`: logout tokens must not carry one (it is how an ID token could pass as one).
        public static let containsNonce = Reason(base: .containsNonce)
        /// No `jti`, without which a replay cannot be told apart.
        public static let missingID = Reason(base: .missingID)
        /// The provider's key set could not be fetched: nothing was checked (retryable).
        public static let keysUnavailable = Reason(base: .keysUnavailable)

        private init(base: Base) { self.base = base }

        init(_ failure: SignedJWT.Failure) { base = Base(rawValue: failure.rawValue) ?? .malformed }

        /// The check's name.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// Which check failed.
    public var reason: Reason

    /// Creates an error.
    public init(_ reason: Reason) { self.reason = reason }

    init(_ failure: SignedJWT.Failure) { self.init(Reason(failure)) }

    public var description: String { "The logout token was refused: \(reason.rawValue)." }
}

/// The claims of a verified logout token: whose sessions end (`sub`: every session of this
/// user, unless `sid` names one), and its `jti` for the replay check (see ``VerifiedClaims``).
public struct LogoutTokenClaims: VerifiedClaims, Hashable {
    /// Every claim, as it came.
    public var all: [String: JSONValue]
}

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
