/// A check that a provider's signed token failed: an ID token's (``IDTokenError``) or a logout
/// token's (``LogoutTokenError``). The two share the checks of a signed JWT (its size, algorithm,
/// key, signature, issuer and audience) and the time checks; each error type's documentation says
/// which of the others it reports. Its description names the check, never the token.
public struct TokenCheck: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable {
        case malformed, tooLarge, algorithmNotAllowed, unknownKey, invalidSignature, wrongType, issuerMismatch,
            audienceMismatch, authorizedPartyMismatch, expired, issuedInFuture, notYetValid, tooOld, nonceMismatch,
            accessTokenHashMismatch, subjectMismatch, missingEvent, noSubjectOrSession, containsNonce, missingID,
            keysUnavailable
    }

    private let base: Base

    /// Not a compact JWS with a JSON header and payload.
    public static let malformed = TokenCheck(base: .malformed)
    /// Larger than ``IDTokenVerifier/maximumLength``.
    public static let tooLarge = TokenCheck(base: .tooLarge)
    /// `alg` is not on the allow-list (`none` and HMAC never are), or does not fit the key.
    public static let algorithmNotAllowed = TokenCheck(base: .algorithmNotAllowed)
    /// No key in the provider's JWKS has the token's `kid`, even after fetching it again.
    public static let unknownKey = TokenCheck(base: .unknownKey)
    /// The signature does not verify.
    public static let invalidSignature = TokenCheck(base: .invalidSignature)
    /// A logout token's header `typ` names another kind of token (`at+jwt`, say): neither
    /// `logout+jwt` nor the generic `JWT` of untyped tokens.
    public static let wrongType = TokenCheck(base: .wrongType)
    /// `iss` is not the provider's issuer.
    public static let issuerMismatch = TokenCheck(base: .issuerMismatch)
    /// `aud` does not contain the client id.
    public static let audienceMismatch = TokenCheck(base: .audienceMismatch)
    /// An ID token's `azp` is missing where it is required (several audiences) or is not the
    /// client id.
    public static let authorizedPartyMismatch = TokenCheck(base: .authorizedPartyMismatch)
    /// `exp` has passed (beyond the leeway).
    public static let expired = TokenCheck(base: .expired)
    /// `iat` is missing, or in the future (beyond the leeway).
    public static let issuedInFuture = TokenCheck(base: .issuedInFuture)
    /// An ID token's `nbf` is in the future (beyond the leeway): not valid yet.
    public static let notYetValid = TokenCheck(base: .notYetValid)
    /// A logout token without `exp` whose `iat` is older than ``LogoutTokenVerifier/maximumAge``.
    public static let tooOld = TokenCheck(base: .tooOld)
    /// An ID token's `nonce` is not the one sent with the request.
    public static let nonceMismatch = TokenCheck(base: .nonceMismatch)
    /// An ID token's `at_hash` does not match the access token.
    public static let accessTokenHashMismatch = TokenCheck(base: .accessTokenHashMismatch)
    /// An ID token's `sub` changed on refresh (OpenID Connect Core §12.2).
    public static let subjectMismatch = TokenCheck(base: .subjectMismatch)
    /// A logout token's `events` does not hold the back-channel logout event.
    public static let missingEvent = TokenCheck(base: .missingEvent)
    /// A logout token has neither `sub` nor `sid`: nothing says whose sessions end.
    public static let noSubjectOrSession = TokenCheck(base: .noSubjectOrSession)
    /// A logout token carries a `nonce`, which it must not (it is how an ID token could pass as one).
    public static let containsNonce = TokenCheck(base: .containsNonce)
    /// A logout token has no `jti`, without which a replay cannot be told apart.
    public static let missingID = TokenCheck(base: .missingID)
    /// The provider's key set could not be fetched: nothing was checked (retryable).
    public static let keysUnavailable = TokenCheck(base: .keysUnavailable)

    private init(base: Base) { self.base = base }

    /// The check that reports `failure` of the signed-JWT half.
    init(_ failure: SignedJWT.Failure) { base = Base(rawValue: failure.rawValue) ?? .malformed }

    /// The check's name.
    public var rawValue: String { base.rawValue }
    public var description: String { base.rawValue }
}

/// Why a provider's signed token (``IDTokenError``, ``LogoutTokenError``) was refused: which
/// check failed. Its description names the check, never the token.
public struct TokenRejection<Claims: VerifiedClaims>: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which check failed.
    public typealias Reason = TokenCheck

    /// Which check failed.
    public var reason: TokenCheck

    /// Creates an error.
    public init(_ reason: TokenCheck) { self.reason = reason }

    init(_ failure: SignedJWT.Failure) { self.init(TokenCheck(failure)) }

    public var description: String { "The \(Claims.tokenName) was refused: \(reason.rawValue)." }
}

/// Why an ID token was rejected. Its description names the check, never the token.
///
/// The checks it reports: a signed JWT's (size, `alg`, key, signature, `iss`, `aud`), then
/// `azp`, `exp`, `iat`, `nbf`, `nonce`, `sub` and `at_hash`.
public typealias IDTokenError = TokenRejection<IDTokenClaims>

/// Why a logout token was refused. Its description names the check, never the token.
///
/// The checks it reports: a signed JWT's (size, `alg`, key, signature, `iss`, `aud`), then
/// `typ`, `iat`, `exp` (or the age of a token without it), `events`, `sub` or `sid`, no
/// `nonce`, `jti`, and whether the key set could be fetched at all.
public typealias LogoutTokenError = TokenRejection<LogoutTokenClaims>
