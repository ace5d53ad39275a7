import Crypto

#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// An account's DPoP key (RFC 9449): an ES256 key pair made for that account alone at sign-in.
/// Its public half travels in every proof; its private half never leaves the process except
/// sealed in the store with the account's tokens, and no API hands it out. A description names
/// the key by its thumbprint only.
public struct DPoPKey: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    private let key: P256.Signing.PrivateKey
    /// The proofs' JOSE header, encoded once: it is the same for every proof of the key.
    package let encodedHeader: String

    /// A new key.
    package init() {
        self.init(P256.Signing.PrivateKey())
    }

    /// The key whose private half is `rawRepresentation` (32 bytes); `nil` when those bytes are
    /// no P-256 private key.
    package init?(rawRepresentation: Data) {
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: rawRepresentation) else { return nil }
        self.init(key)
    }

    private init(_ key: P256.Signing.PrivateKey) {
        self.key = key
        let point = key.publicKey.rawRepresentation  // x ‖ y, 32 bytes each
        // RFC 9449 §4.2: typ, alg, and the public key; keys in order, as JSON writes them sorted.
        let header =
            #"{"alg":"ES256","jwk":{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(point.prefix(32)))","y":"\#(Base64URL.encode(point.suffix(32)))"},"typ":"dpop+jwt"}"#
        encodedHeader = Base64URL.encode(Data(header.utf8))
    }

    /// The private half, for sealing into the store and nothing else.
    package var rawRepresentation: Data { key.rawRepresentation }

    /// The public half as a JWK (RFC 7517): the members RFC 7638 hashes, nothing more.
    package var publicJWK: [String: String] {
        let point = key.publicKey.rawRepresentation  // x ‖ y, 32 bytes each
        return [
            "kty": "EC", "crv": "P-256", "x": Base64URL.encode(point.prefix(32)),
            "y": Base64URL.encode(point.suffix(32)),
        ]
    }

    /// The JWK SHA-256 thumbprint (RFC 7638), base64url: what a provider puts in a bound token's
    /// `cnf.jkt` and accepts as `dpop_jkt`.
    public var thumbprint: String {
        let jwk = publicJWK
        // RFC 7638 §3.2: the required members in lexicographic order, no white space.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"] ?? "")","y":"\#(jwk["y"] ?? "")"}"#
        return Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    /// Signs `input` (ES256: r ‖ s, 64 bytes).
    package func sign(_ input: Data) throws -> Data {
        try key.signature(for: input).rawRepresentation
    }

    /// Names the key by its thumbprint; the private half is never shown.
    public var description: String { "DPoPKey(jkt: \(thumbprint))" }

    /// What `dump` and debuggers show: the thumbprint, never the private half.
    public var customMirror: Mirror { Mirror(self, children: ["jkt": thumbprint]) }

    public static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool { lhs.rawRepresentation == rhs.rawRepresentation }

    public func hash(into hasher: inout Hasher) { hasher.combine(thumbprint) }
}
