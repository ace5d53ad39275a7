/// Why a web sign-in did not complete. Its text never holds a token, a code or a cookie.
public struct WebSignInError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unknownSignIn, stateMismatch, tooManySignIns, provider, storage
        }
        private let base: Base

        /// The browser came back without a pending sign-in of this app: its cookie is missing,
        /// expired, or the sign-in was already completed (a redirect replayed).
        public static let unknownSignIn = Code(base: .unknownSignIn)
        /// The redirect's `state` is not the pending sign-in's: another site sent the browser
        /// there. The pending sign-in stays, so the user's own sign-in still completes.
        public static let stateMismatch = Code(base: .stateMismatch)
        /// The client address has as many sign-ins pending as
        /// ``WebSessionPolicy/pendingSignInsPerClient`` allows; nothing was kept (answer 429).
        public static let tooManySignIns = Code(base: .tooManySignIns)
        /// The provider refused or could not be reached; ``WebSignInError/underlying`` says how.
        public static let provider = Code(base: .provider)
        /// The store failed; the grant the provider issued was revoked.
        public static let storage = Code(base: .storage)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A safe explanation.
    public var reason: String
    /// The provider's or the store's error.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, reason: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String { underlying.map { "\(reason) (\($0))" } ?? reason }
}

/// Why a back-channel logout request was not carried out.
public struct BackChannelLogoutError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case refused, replayed, unavailable
        }
        private let base: Base

        /// The logout token failed a check (``BackChannelLogoutError/refusal`` names it): answer 400.
        public static let refused = Code(base: .refused)
        /// The token's `jti` was seen before, on this instance or another: answer 400.
        public static let replayed = Code(base: .replayed)
        /// The provider's keys or the store could not be reached; nothing ended, and the
        /// token was not remembered, so the provider's retry is taken: answer 503.
        public static let unavailable = Code(base: .unavailable)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The check that failed, for ``Code/refused``.
    public var refusal: LogoutTokenError?
    /// The store's error, for ``Code/unavailable``.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, refusal: LogoutTokenError? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.refusal = refusal
        self.underlying = underlying
    }

    /// The error code to answer with (Back-Channel Logout §2.8): `invalid_request`.
    public var oauthError: String { "invalid_request" }

    public var description: String {
        switch code {
        case .refused: return refusal?.description ?? "The logout token was refused."
        case .replayed: return "The logout token was refused: its jti was seen before (a replay)."
        default: return "The logout could not be carried out now; nothing ended."
        }
    }
}
