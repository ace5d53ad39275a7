public import Foundation
public import HTTPTypes
public import Latchkey

/// Why the proxy could not deliver a message, or an answer: reported to the proxy's
/// ``MCPProxy/Configuration/report`` and, for a request, answered to the client as a JSON-RPC
/// error. It never holds a token or a message's content.
public struct MCPProxyFailure: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// The server refused the token even after a refresh (a 401 twice).
        case tokenRefused
        /// The token lacks a scope the server needs (`insufficient_scope`, RFC 6750 §3.1); ``scope``
        /// names it when the server did.
        case insufficientScope
        /// The server no longer knows the session (404 to a request with `Mcp-Session-Id`): the
        /// client must start again.
        case sessionEnded
        /// The server answered with another status.
        case refused
        /// No token: the account was signed out (its credential is no longer in the store).
        case signedOut
        /// No token: the credential could not give one (a refresh refused, storage).
        case credential
        /// The server could not be reached, or did not answer in time.
        case unreachable
        /// The server ended the answer's stream before the answer, and it could not be resumed.
        case streamEnded
    }

    /// The kind of failure.
    public var code: Code
    /// The server's status, when it answered.
    public var status: HTTPResponse.Status?
    /// The scope the server asked for (`insufficientScope`), as it gave it.
    public var scope: String?
    /// What the server said of it (its challenge's `error_description`), as it said it.
    public var serverDescription: String?
    /// The credential's error (`credential`, `unreachable` while refreshing).
    public var providerError: ProviderError?
    /// The server's URL.
    public var endpoint: URL

    /// Creates a failure.
    public init(
        _ code: Code, endpoint: URL, status: HTTPResponse.Status? = nil, scope: String? = nil,
        serverDescription: String? = nil, providerError: ProviderError? = nil
    ) {
        self.serverDescription = serverDescription
        self.code = code
        self.endpoint = endpoint
        self.status = status
        self.scope = scope
        self.providerError = providerError
    }

    /// The failure of a credential that gave no token: `signedOut` when its credential is gone.
    static func noToken(_ error: ProviderError, endpoint: URL) -> MCPProxyFailure {
        let gone = (error.underlying as? StorageError)?.code == .credentialNotFound
        let code: Code =
            gone ? .signedOut : [.transport, .timedOut].contains(error.code) ? .unreachable : .credential
        return MCPProxyFailure(code, endpoint: endpoint, providerError: error)
    }

    public var description: String {
        let server = endpoint.absoluteString
        switch code {
        case .tokenRefused: return "\(server) refused the account's token, also after a refresh."
        case .insufficientScope:
            let named = scope ?? serverDescription
            return "\(server) needs a scope the token lacks\(named.map { " (\($0))" } ?? "")."
        case .sessionEnded: return "\(server) ended the MCP session: start the client again."
        case .refused:
            let answered = "\(server) answered \(status.map { "\($0.code)" } ?? "with an error")"
            return answered + (serverDescription.map { ": \($0)" } ?? ".")
        case .signedOut: return "The account was signed out: no token for \(server)."
        case .credential: return "No token for \(server): \(providerError.map { "\($0)" } ?? "the credential failed")."
        case .unreachable:
            return "\(server) could not be reached\(providerError.map { ": \($0)" } ?? ".")"
        case .streamEnded: return "\(server) ended its answer's stream before the answer."
        }
    }
}
