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

    public static let invalidRequest: Self = "invalid_request"
    public static let invalidClient: Self = "invalid_client"
    public static let invalidGrant: Self = "invalid_grant"
    public static let unauthorizedClient: Self = "unauthorized_client"
    public static let unsupportedGrantType: Self = "unsupported_grant_type"
    public static let invalidScope: Self = "invalid_scope"
    public static let accessDenied: Self = "access_denied"
    public static let unsupportedResponseType: Self = "unsupported_response_type"
    public static let serverError: Self = "server_error"
    public static let temporarilyUnavailable: Self = "temporarily_unavailable"
    public static let invalidToken: Self = "invalid_token"
    public static let insufficientScope: Self = "insufficient_scope"
    public static let unsupportedTokenType: Self = "unsupported_token_type"
    public static let authorizationPending: Self = "authorization_pending"
    public static let slowDown: Self = "slow_down"
    public static let expiredToken: Self = "expired_token"
    public static let loginRequired: Self = "login_required"
    public static let consentRequired: Self = "consent_required"
    public static let interactionRequired: Self = "interaction_required"
}
