#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The identifier of a stored credential: stable for the credential's life, unique in its store.
public struct CredentialID: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The identifier's text.
    public let rawValue: String

    /// Wraps an existing identifier.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps an existing identifier, written as a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// A new random identifier (a lowercase UUID).
    public init() { self.rawValue = UUID().uuidString.lowercased() }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
