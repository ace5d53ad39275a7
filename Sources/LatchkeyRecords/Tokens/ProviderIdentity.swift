/// Which provider and client a token came from.
///
/// Tokens are only meaningful to the issuer that minted them and to the client they were minted
/// for; the pair is kept with every token so that a refresh or a revocation goes to the right place.
public struct ProviderIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The issuer identifier, compared as an exact string (OpenID Connect Discovery §4.3).
    public var issuer: String
    /// The OAuth client identifier the token was issued to.
    public var clientID: String

    /// Creates an identity from an issuer identifier and a client identifier.
    public init(issuer: String, clientID: String) {
        self.issuer = issuer
        self.clientID = clientID
    }

    enum CodingKeys: String, CodingKey {
        case issuer
        case clientID = "client_id"
    }

    public var description: String { "\(clientID)@\(issuer)" }
}
