/// A JWS signature algorithm (RFC 7518 §3.1) an ID token may be signed with. Unknown names are
/// kept as they came; only the asymmetric ones Latchkey verifies are offered as constants, and
/// `none` and the HMAC family are never accepted, whatever a set lists.
public struct JWSAlgorithm: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The algorithm's name as a JOSE header carries it.
    public let rawValue: String

    /// Wraps a name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps a name written as a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    /// RSASSA-PKCS1-v1_5 with SHA-256.
    public static let rs256: Self = "RS256"
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    public static let rs384: Self = "RS384"
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    public static let rs512: Self = "RS512"
    /// RSASSA-PSS with SHA-256.
    public static let ps256: Self = "PS256"
    /// RSASSA-PSS with SHA-384.
    public static let ps384: Self = "PS384"
    /// RSASSA-PSS with SHA-512.
    public static let ps512: Self = "PS512"
    /// ECDSA on P-256 with SHA-256.
    public static let es256: Self = "ES256"
    /// ECDSA on P-384 with SHA-384.
    public static let es384: Self = "ES384"

    /// Whether Latchkey may ever accept it: never `none`, never the HMAC family (a shared
    /// secret is not a provider's signature).
    public var isAcceptable: Bool { !rawValue.hasPrefix("HS") && rawValue.lowercased() != "none" }
}
