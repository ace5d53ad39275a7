#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// An access token for one resource (RFC 8707 resource indicators), got with the account's
/// refresh token, perhaps for fewer scopes: the account's one grant, an audience per API.
///
/// Its `description` never shows the token.
public struct ResourceToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The resource the token is for, as asked (an absolute URI without a fragment); `nil` for a
    /// token with narrowed scopes and the provider's default audience.
    public var resource: String?
    /// The scopes asked for, or `nil` for the grant's.
    public var requestedScopes: [String]?
    /// The access token.
    public var accessToken: String
    /// Its type: `Bearer`, or `DPoP` for a token bound to the account's key.
    public var tokenType: String
    /// The scopes granted, when the provider said.
    public var scopes: [String]?
    /// When it was received.
    public var issuedAt: Date
    /// When it expires, when the provider said.
    public var expiresAt: Date?

    /// Creates a resource token from its parts.
    public init(
        resource: String?, requestedScopes: [String]?, accessToken: String, tokenType: String, scopes: [String]?,
        issuedAt: Date, expiresAt: Date?
    ) {
        self.resource = resource
        self.requestedScopes = requestedScopes
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.scopes = scopes
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// The key of a resource and scopes in ``Token/resourceTokens``.
    public static func key(resource: String?, scopes: [String]?) -> String {
        guard let scopes else { return resource ?? "" }
        return (resource ?? "") + " " + Set(scopes).sorted().joined(separator: " ")
    }

    /// Whether it can be handed out at `date` for `margin` seconds: it stays valid that long,
    /// or, for a token that lives less than twice that, for half its lifetime (the account's own
    /// token's rule: a 10-second token is kept for 5 seconds, not refreshed at every call). One
    /// without an expiry always can.
    public func isValid(for margin: TimeInterval, at date: Date) -> Bool {
        guard let expiresAt else { return true }
        return expiresAt.timeIntervalSince(date) > min(margin, expiresAt.timeIntervalSince(issuedAt) / 2)
    }

    /// The resource, scopes and expiry; never the token.
    public var description: String {
        "ResourceToken(resource: \(resource ?? "-"), type: \(tokenType), scopes: \(scopes?.joined(separator: " ") ?? "-"))"
    }

    /// Whether `text` is a resource indicator RFC 8707 §2 allows: an absolute URI without a
    /// fragment.
    public static func isValidResource(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme, !scheme.isEmpty,
            components.fragment == nil, !text.contains("#")
        else { return false }
        return components.host?.isEmpty == false || !components.path.isEmpty
    }
}
