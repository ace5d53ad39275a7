#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What a process asks `latchkey agent` for: one JSON object on one line of the agent's socket.
///
/// The agent hands out access tokens, DPoP proofs and an account's claims; it never hands out a
/// refresh token, a DPoP key or the store's key, and an ID token only through a socket that
/// allows it (``AgentPolicy/allowsIDTokens``).
public struct AgentRequest: Sendable, Codable, Hashable {
    /// What is asked.
    public enum Operation: String, Sendable, Codable, Hashable {
        /// An access token (the account's, or a resource's and narrower scopes').
        case token
        /// The access token git sends to the host ``AgentRequest/url`` names (`protocol://host`):
        /// the agent answers only where one of its providers names the host (`--git-host`),
        /// plain http only where that provider allows it, with an account of that provider
        /// (``AgentRequest/account`` is git's username, when git gave one).
        case gitToken = "git-token"
        /// The account's ID token.
        case idToken = "id-token"
        /// The `Authorization` header (and for a bound token the `DPoP` proof) of one request.
        case authorize
        /// The access token a server refused (``AgentRequest/accessToken``): the next one is new.
        case reject
        /// The account's claims from the provider's userinfo endpoint.
        case userInfo = "userinfo"
        /// What a command checks a resource against before it asks for a token for it: the
        /// account's issuer and the resources the user paired with it (``AgentAnswer/resources``).
        /// No token.
        case describe
        /// A refresh token: always refused (a socket never hands one out).
        case refreshToken = "refresh-token"
        /// Stops the agent (only through its owner's socket).
        case stop
    }

    /// What is asked.
    public var operation: Operation
    /// An account id, username or email; the agent's choice (its one account, or the default)
    /// when `nil`.
    public var account: String?
    /// The resource the token is for (RFC 8707).
    public var resource: String?
    /// Scopes narrower than the grant's.
    public var scopes: [String]?
    /// How long the token must stay valid, in seconds.
    public var minimumValidity: Double?
    /// ``Operation/authorize``: the request's method and URL, and the server's DPoP nonce.
    public var method: String?
    /// ``Operation/authorize``: the request's URL; ``Operation/gitToken``: git's
    /// `protocol://host`.
    public var url: String?
    /// ``Operation/authorize``: the DPoP nonce the server gave.
    public var nonce: String?
    /// ``Operation/reject``: the access token the server refused.
    public var accessToken: String?
    /// The store the asker reads itself (its path or URL), when it has one: the agent answers
    /// only for its own (a process with a store of its own asks its agent to refresh for it).
    public var store: String?

    /// Creates a request.
    public init(
        _ operation: Operation, account: String? = nil, resource: String? = nil, scopes: [String]? = nil,
        minimumValidity: Double? = nil, method: String? = nil, url: String? = nil, nonce: String? = nil,
        accessToken: String? = nil, store: String? = nil
    ) {
        self.operation = operation
        self.account = account
        self.resource = resource
        self.scopes = scopes
        self.minimumValidity = minimumValidity
        self.method = method
        self.url = url
        self.nonce = nonce
        self.accessToken = accessToken
        self.store = store
    }
}

extension AgentRequest: CustomStringConvertible {
    /// The operation, account, resource, scopes and git host: never a token. Every value came
    /// from the asker, so each is made visible (``VisibleText``) before it is shown or logged.
    public var description: String {
        var parts = [operation.rawValue]
        if let account { parts.append("account \(VisibleText.of(account))") }
        if let resource { parts.append("resource \(VisibleText.of(resource))") }
        if let scopes { parts.append("scopes \(VisibleText.of(scopes.joined(separator: " ")))") }
        if operation == .gitToken, let url { parts.append("git host \(VisibleText.of(url))") }
        if operation == .authorize, let method, let url {
            parts.append("request \(VisibleText.of(method)) \(VisibleText.of(url))")
        }
        return parts.joined(separator: ", ")
    }
}
