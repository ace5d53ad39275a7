/// What is known about the account a credential belongs to: read from the ID token's claims,
/// plus tags the application sets.
///
/// Metadata holds no secret and is what ``CredentialStore/find(_:)`` searches.
public struct CredentialMetadata: Sendable, Hashable, Codable {
    /// `sub`: the account's identifier at the issuer.
    public var subject: String?
    /// `preferred_username` (or, for Amazon Cognito, `cognito:username`).
    public var preferredUsername: String?
    /// `email`.
    public var email: String?
    /// `name`.
    public var name: String?
    /// The issuer the tokens came from.
    public var issuer: String
    /// The client the tokens were issued to.
    public var clientID: String
    /// Application-defined labels, e.g. `["role": "admin"]`.
    public var tags: [String: String]

    /// Creates metadata from its parts.
    public init(
        subject: String? = nil,
        preferredUsername: String? = nil,
        email: String? = nil,
        name: String? = nil,
        issuer: String,
        clientID: String,
        tags: [String: String] = [:]
    ) {
        self.subject = subject
        self.preferredUsername = preferredUsername
        self.email = email
        self.name = name
        self.issuer = issuer
        self.clientID = clientID
        self.tags = tags
    }

    /// Reads the metadata of `token`: account claims from its ID token (when it has one), the
    /// issuer and client from the provider it came from.
    public init(token: Token, tags: [String: String] = [:]) {
        self.init(issuer: token.provider.issuer, clientID: token.provider.clientID, tags: tags)
        guard let idToken = token.idToken, let claims = UnverifiedClaims.read(idToken) else { return }
        read(claims)
    }

    /// Takes the account claims (`sub`, `preferred_username`, `email`, `name`) from an ID
    /// token's payload or a userinfo answer; claims that are absent leave the values as they are.
    public mutating func read(_ claims: [String: JSONValue]) {
        subject = claims["sub"]?.stringValue ?? subject
        preferredUsername =
            claims["preferred_username"]?.stringValue ?? claims["cognito:username"]?.stringValue
            ?? claims["username"]?.stringValue ?? preferredUsername
        email = claims["email"]?.stringValue ?? email
        name = claims["name"]?.stringValue ?? name
    }

    /// The name to show for the account: the username, else the email, else the subject.
    public var displayName: String? { preferredUsername ?? email ?? subject }
}

/// An indexed lookup in a credential store.
public enum CredentialQuery: Sendable, Hashable {
    /// Credentials whose ID token's `sub` is this value.
    case subject(String)
    /// Credentials whose `preferred_username` is this value.
    case username(String)
    /// Credentials whose `email` is this value (compared exactly).
    case email(String)
    /// Credentials issued by this issuer.
    case issuer(String)

    /// Whether `metadata` matches this query.
    public func matches(_ metadata: CredentialMetadata) -> Bool {
        switch self {
        case .subject(let value): return metadata.subject == value
        case .username(let value): return metadata.preferredUsername == value
        case .email(let value): return metadata.email == value
        case .issuer(let value): return metadata.issuer == value
        }
    }
}
