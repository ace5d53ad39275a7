/// Why a resource's authorization server cannot serve the sign-in asked for
/// (``ResourceSignInPlan``): a value to switch over, and a sentence that says what to do.
public struct ResourceSignInRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is missing, as a value to switch over with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        /// The resource names no authorization server.
        public static let noAuthorizationServer = Code(name: "noAuthorizationServer")
        /// The server does not take PKCE with S256, which the code flow needs.
        public static let noPKCE = Code(name: "noPKCE")
        /// The server has no device authorization endpoint.
        public static let noDeviceGrant = Code(name: "noDeviceGrant")
        /// No client id was given and the server registers none.
        public static let noRegistration = Code(name: "noRegistration")
        /// The client id is a URL that cannot name a client metadata document.
        public static let invalidClientID = Code(name: "invalidClientID")
        /// The client id names a metadata document, which the server does not fetch.
        public static let noMetadataDocuments = Code(name: "noMetadataDocuments")

        public var description: String { name }
    }

    /// What is missing.
    public var code: Code
    /// What is missing and what to do, in a sentence.
    public var reason: String

    /// A refusal of `code`, saying `reason`.
    public init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }
}
