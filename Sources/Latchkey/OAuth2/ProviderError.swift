import Foundation

/// A failure while talking to an identity provider. It says which endpoint, what the provider
/// answered (OAuth error code, description, HTTP status, `Retry-After`) and whether trying again
/// later can help. Its `description` never contains a token.
public struct ProviderError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to compare with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case oauth, httpStatus, transport, invalidResponse, insecureEndpoint, missingEndpoint, idTokenRejected,
                stateMismatch, timedOut, signInRequired, storage, unsupported, cancelled, dpopKeyUnavailable,
                invalidArgument, noProviderRegistered, invalidEndpoint, dpopNotHonored
        }

        private let base: Base

        /// The provider answered with an OAuth error (see ``ProviderError/oauthError``).
        public static let oauth = Code(base: .oauth)
        /// The provider answered with an HTTP error status and no OAuth error.
        public static let httpStatus = Code(base: .httpStatus)
        /// No answer: the connection failed, timed out or was cut.
        public static let transport = Code(base: .transport)
        /// The answer could not be read (not JSON, missing fields, too large).
        public static let invalidResponse = Code(base: .invalidResponse)
        /// An endpoint is not https (or http on loopback); nothing was sent.
        public static let insecureEndpoint = Code(base: .insecureEndpoint)
        /// The provider has no such endpoint (not in discovery, not configured).
        public static let missingEndpoint = Code(base: .missingEndpoint)
        /// An ID token failed verification (see ``ProviderError/underlying``, an ``IDTokenError``).
        public static let idTokenRejected = Code(base: .idTokenRejected)
        /// The redirect's `state` is not the one sent: the answer is not for this request.
        public static let stateMismatch = Code(base: .stateMismatch)
        /// The user did not finish in time (browser or device code).
        public static let timedOut = Code(base: .timedOut)
        /// The refresh token was rejected: the account must sign in again. Nothing was deleted.
        public static let signInRequired = Code(base: .signInRequired)
        /// The credential's tokens are bound to a DPoP key (RFC 9449) that the store no longer
        /// holds, or that does not open: that account must sign in again; no other is touched.
        public static let dpopKeyUnavailable = Code(base: .dpopKeyUnavailable)
        /// A value the caller passed cannot be used (a resource indicator that is not an absolute
        /// URI); nothing was sent.
        public static let invalidArgument = Code(base: .invalidArgument)
        /// The credential store failed (see ``ProviderError/underlying``, a ``StorageError``).
        public static let storage = Code(base: .storage)
        /// The provider does not support what was asked.
        public static let unsupported = Code(base: .unsupported)
        /// The operation was cancelled.
        public static let cancelled = Code(base: .cancelled)
        /// No provider is registered with the store for the credential's or outbox entry's
        /// issuer and client (``CredentialStore/register(_:)``); nothing was sent.
        public static let noProviderRegistered = Code(base: .noProviderRegistered)
        /// An endpoint's URL (from the provider's metadata, the configuration or the caller) is
        /// not one a request can go to: relative, or without a scheme or host; nothing was sent.
        public static let invalidEndpoint = Code(base: .invalidEndpoint)
        /// The provider answered a request that carried a DPoP proof with tokens that are not
        /// DPoP-bound (`token_type` other than `DPoP`) where binding is required: by the
        /// configuration (``DPoPPolicy/required``) at a sign-in, whose tokens were revoked; or
        /// by the credential, bound already, at a refresh, whose stored tokens were kept.
        public static let dpopNotHonored = Code(base: .dpopNotHonored)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The endpoint involved.
    public var endpoint: EndpointKind?
    /// The OAuth error code the provider sent, if any.
    public var oauthError: OAuthErrorCode?
    /// The provider's `error_description`, if any (with any token Latchkey sent removed).
    public var errorDescription: String?
    /// The HTTP status, when there was a response.
    public var status: Int?
    /// How long the provider asked to wait (`Retry-After`).
    public var retryAfter: Duration?
    /// A short explanation of Latchkey's own.
    public var reason: String
    /// The error that caused this one.
    public var underlying: (any Error & Sendable)?
    /// Set by a provider whose own protocol says whether a retry can help (a throttling answer
    /// with status 400, say); otherwise the status and the OAuth error decide.
    var retryableByProvider: Bool?
    /// Set by a provider whose own protocol says the token sent was not valid.
    var tokenRejectedByProvider = false

    /// Creates an error.
    public init(
        _ code: Code, endpoint: EndpointKind? = nil, reason: String, oauthError: OAuthErrorCode? = nil,
        errorDescription: String? = nil, status: Int? = nil, retryAfter: Duration? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.endpoint = endpoint
        self.reason = reason
        self.oauthError = oauthError
        self.errorDescription = errorDescription
        self.status = status
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// Whether the same request may succeed later: no answer at all, a 5xx or 429, the
    /// provider's `temporarily_unavailable` / `server_error`, or a storage failure that is itself
    /// retryable (``StorageError/isRetryable``). Everything else is final.
    public var isRetryable: Bool {
        if let retryableByProvider { return retryableByProvider }
        switch code {
        case .transport, .timedOut: return true
        case .oauth, .httpStatus:
            if oauthError == .temporarilyUnavailable || oauthError == .serverError { return true }
            guard let status else { return false }
            return status >= 500 || status == 429 || status == 408
        case .storage:
            // A busy database may clear; a damaged store or a wrong key will not.
            return (underlying as? StorageError)?.isRetryable ?? false
        default:
            return false
        }
    }

    /// Whether the provider rejected the access token sent (expired or revoked): a refresh may
    /// help. The same rule as a resource server's answer (``Credential/send(_:body:resource:scopes:through:options:)``):
    /// `invalid_token`, or a 401 that names no other error.
    public var rejectedAccessToken: Bool {
        oauthError == .invalidToken || (status == 401 && oauthError == nil) || tokenRejectedByProvider
    }

    /// Whether the account must sign in again: its refresh token was rejected, or the key its
    /// tokens are bound to is gone.
    public var requiresSignIn: Bool { code == .signInRequired || code == .dpopKeyUnavailable }

    public var description: String {
        var parts = [reason]
        if let endpoint { parts.append("endpoint: \(endpoint)") }
        if let status { parts.append("status: \(status)") }
        if let oauthError { parts.append("error: \(oauthError)") }
        if let errorDescription { parts.append("description: \(errorDescription)") }
        if let underlying = underlying as? any ShownCause { parts.append("cause: \(underlying)") }
        return parts.joined(separator: "; ")
    }

    static func transport(_ error: TransportError, endpoint: EndpointKind) -> ProviderError {
        ProviderError(
            error.kind == .invalidURL ? .insecureEndpoint : (error.kind == .cancelled ? .cancelled : .transport),
            endpoint: endpoint, reason: "The \(endpoint) endpoint could not be reached.", underlying: error)
    }

    static func storage(_ error: StorageError) -> ProviderError {
        ProviderError(.storage, reason: "The credential store failed.", underlying: error)
    }
}

/// An error whose text a ``ProviderError``'s description shows as its cause: one whose text
/// never holds a token or a secret. Any other underlying error is kept, never shown. The
/// providers' own errors conform where they are defined, so that this type names none of them.
package protocol ShownCause: Error, CustomStringConvertible {}

extension TokenRejection: ShownCause {}
extension TransportError: ShownCause {}
extension StorageError: ShownCause {}
