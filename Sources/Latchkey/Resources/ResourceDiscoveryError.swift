public import Foundation

/// Why a protected resource's authorization could not be discovered (RFC 9728): the resource,
/// its metadata or its authorization server is not what the RFCs ask for, or cannot be reached.
/// It names the URL involved and never carries a token.
public struct ResourceDiscoveryError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to switch over with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        /// The resource URL is not an absolute https URL (http only to the loopback interface)
        /// without a fragment.
        public static let invalidResource = Code(name: "invalidResource")
        /// The resource, its metadata or its authorization server did not answer.
        public static let unreachable = Code(name: "unreachable")
        /// The resource answered without asking for authorization: there is nothing to sign in to.
        public static let notProtected = Code(name: "notProtected")
        /// The resource has no protected resource metadata (no `resource_metadata` in its
        /// challenge, and nothing at the well-known URL).
        public static let noMetadata = Code(name: "noMetadata")
        /// A metadata document is not valid JSON of the RFC's shape, or names an unusable URL.
        public static let invalidMetadata = Code(name: "invalidMetadata")
        /// The metadata's `resource` is not the resource it was fetched for (RFC 9728 §3.3): its
        /// content must not be used.
        public static let resourceMismatch = Code(name: "resourceMismatch")
        /// The metadata names no authorization server Latchkey can use.
        public static let noAuthorizationServer = Code(name: "noAuthorizationServer")

        public var description: String { name }
    }

    /// What went wrong.
    public var code: Code
    /// The URL involved.
    public var url: URL?
    /// A human-readable explanation that says what to do where it can.
    public var reason: String
    /// The HTTP status that was answered, when there was one.
    public var status: Int?

    /// Creates an error.
    public init(_ code: Code, url: URL?, reason: String, status: Int? = nil) {
        self.code = code
        self.url = url
        self.reason = reason
        self.status = status
    }

    public var description: String {
        var text = "\(code): \(reason)"
        if let status { text += " (HTTP \(status))" }
        return text
    }
}
