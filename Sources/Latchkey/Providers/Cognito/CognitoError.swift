/// What Amazon Cognito said when it refused a call: its error type (`__type`) and message.
/// ``ProviderError/underlying`` carries it for Cognito's refusals; the generic error knows
/// nothing of Cognito.
public struct CognitoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Cognito's error type, as a value that keeps types Latchkey does not know.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// Cognito's name for it, without a namespace.
        public let rawValue: String
        /// Wraps Cognito's name for an error type.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The credentials or the token were refused (a wrong password, a revoked token).
        public static let notAuthorized = Kind(rawValue: "NotAuthorizedException")
        /// Too many requests: try again later.
        public static let tooManyRequests = Kind(rawValue: "TooManyRequestsException")
        /// Cognito failed: try again later.
        public static let internalError = Kind(rawValue: "InternalErrorException")
        /// No such user.
        public static let userNotFound = Kind(rawValue: "UserNotFoundException")
        /// The request was not valid.
        public static let invalidParameter = Kind(rawValue: "InvalidParameterException")
        /// A refresh token that refresh-token rotation invalidated was used again.
        public static let refreshTokenReuse = Kind(rawValue: "RefreshTokenReuseException")

        public var description: String { rawValue }

        /// Whether Cognito says to try again later.
        public var isTransient: Bool { self == .tooManyRequests || self == .internalError }
    }

    /// Cognito's error type.
    public var kind: Kind
    /// Cognito's message, with any secret Latchkey sent removed.
    public var message: String?
    /// The operation that was refused, e.g. `InitiateAuth`.
    public var operation: String

    /// Creates an error.
    public init(kind: Kind, message: String?, operation: String) {
        self.kind = kind
        self.message = message
        self.operation = operation
    }

    public var description: String {
        "Cognito refused \(operation): \(kind)\(message.map { " (\($0))" } ?? "")"
    }
}

extension CognitoError: ShownCause {}
