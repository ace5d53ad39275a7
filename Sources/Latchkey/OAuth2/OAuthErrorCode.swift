/// An OAuth 2.0 error code (RFC 6749 §5.2, §4.1.2.1; RFC 6750 §3.1; RFC 8628 §3.5; RFC 7009
/// §2.2.1; OpenID Connect Core §3.1.2.6). Unknown codes are kept as they came.
public struct OAuthErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The code as the provider sent it.
    public let rawValue: String

    /// Wraps a code.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps a code written as a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    /// The request lacks a parameter, repeats one, or is malformed (RFC 6749 §5.2).
    public static let invalidRequest: Self = "invalid_request"
    /// Client authentication failed (RFC 6749 §5.2).
    public static let invalidClient: Self = "invalid_client"
    /// The grant or refresh token is invalid, expired, revoked or was issued to another client (RFC 6749 §5.2).
    public static let invalidGrant: Self = "invalid_grant"
    /// The client may not use this grant type (RFC 6749 §5.2).
    public static let unauthorizedClient: Self = "unauthorized_client"
    /// The provider does not support this grant type (RFC 6749 §5.2).
    public static let unsupportedGrantType: Self = "unsupported_grant_type"
    /// A requested scope is invalid, unknown or too broad (RFC 6749 §5.2).
    public static let invalidScope: Self = "invalid_scope"
    /// The user or the provider denied the request (RFC 6749 §4.1.2.1).
    public static let accessDenied: Self = "access_denied"
    /// The provider does not support this response type (RFC 6749 §4.1.2.1).
    public static let unsupportedResponseType: Self = "unsupported_response_type"
    /// The provider failed (RFC 6749 §4.1.2.1): trying again later may help.
    public static let serverError: Self = "server_error"
    /// The provider is overloaded or down for maintenance (RFC 6749 §4.1.2.1): try again later.
    public static let temporarilyUnavailable: Self = "temporarily_unavailable"
    /// The access token is expired, revoked or malformed (RFC 6750 §3.1).
    public static let invalidToken: Self = "invalid_token"
    /// The access token lacks a scope the request needs (RFC 6750 §3.1).
    public static let insufficientScope: Self = "insufficient_scope"
    /// The provider cannot revoke tokens of this type (RFC 7009 §2.2.1).
    public static let unsupportedTokenType: Self = "unsupported_token_type"
    /// The user has not finished the device sign-in yet (RFC 8628 §3.5).
    public static let authorizationPending: Self = "authorization_pending"
    /// The device client polls too fast (RFC 8628 §3.5).
    public static let slowDown: Self = "slow_down"
    /// The device code expired (RFC 8628 §3.5).
    public static let expiredToken: Self = "expired_token"
    /// The provider needs the user to sign in (OpenID Connect Core §3.1.2.6).
    public static let loginRequired: Self = "login_required"
    /// The provider needs the user's consent (OpenID Connect Core §3.1.2.6).
    public static let consentRequired: Self = "consent_required"
    /// The provider needs the user to interact (OpenID Connect Core §3.1.2.6).
    public static let interactionRequired: Self = "interaction_required"
    /// The DPoP proof lacks the server's current nonce, which the answer's `DPoP-Nonce` gives
    /// (RFC 9449 §8 and §9).
    public static let useDPoPNonce: Self = "use_dpop_nonce"
    /// The provider will not issue a token for the resource asked for (RFC 8707 §2).
    public static let invalidTarget: Self = "invalid_target"
    /// The DPoP proof is not valid (RFC 9449 §5.3).
    public static let invalidDPoPProof: Self = "invalid_dpop_proof"
}
