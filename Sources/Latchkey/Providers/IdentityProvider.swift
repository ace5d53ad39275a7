/// What a ``Credential`` needs from the provider its tokens came from. ``OpenIDProvider``
/// implements it for standards-based providers; other providers (Amazon Cognito's own API)
/// implement it over their wire protocol.
public protocol IdentityProvider: Sendable {
    /// The issuer and client the provider's tokens belong to.
    var identity: ProviderIdentity { get }

    /// Exchanges the refresh token of `token` for new tokens. A rejected refresh token throws
    /// ``ProviderError/Code/signInRequired``.
    func refresh(_ token: Token) async throws(ProviderError) -> Token

    /// Revokes one token (RFC 7009 or the provider's equivalent). Revoking a token the provider
    /// does not know is a success.
    func revoke(_ value: String, kind: TokenKind) async throws(ProviderError)

    /// The signed-in user's claims.
    func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue]

    /// What the provider says about a token (RFC 7662).
    func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection
}

/// An introspection answer (RFC 7662 §2.2).
public struct Introspection: Sendable, Hashable {
    /// Whether the token is active.
    public var active: Bool
    /// Every field of the answer.
    public var fields: [String: JSONValue]

    /// Creates an answer.
    public init(active: Bool, fields: [String: JSONValue] = [:]) {
        self.active = active
        self.fields = fields
    }
}
