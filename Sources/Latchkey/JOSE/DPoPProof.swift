import Crypto
package import Foundation

/// An account's DPoP key (RFC 9449): an ES256 key pair made for that account alone at sign-in.
/// Its public half travels in every proof; its private half never leaves the process except
/// sealed in the store with the account's tokens, and no API hands it out. A description names
/// the key by its thumbprint only.
public struct DPoPKey: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    private let key: P256.Signing.PrivateKey
    /// The proofs' JOSE header, encoded once: it is the same for every proof of the key.
    fileprivate let encodedHeader: String

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
    fileprivate func sign(_ input: Data) throws -> Data {
        try key.signature(for: input).rawRepresentation
    }

    /// Names the key by its thumbprint; the private half is never shown.
    public var description: String { "DPoPKey(jkt: \(thumbprint))" }

    /// What `dump` and debuggers show: the thumbprint, never the private half.
    public var customMirror: Mirror { Mirror(self, children: ["jkt": thumbprint]) }

    public static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool { lhs.rawRepresentation == rhs.rawRepresentation }

    public func hash(into hasher: inout Hasher) { hasher.combine(thumbprint) }
}

/// One DPoP proof (RFC 9449 §4.2): a JWT signed with the account's key that shows a request comes
/// from the key's holder. A pure value: the request, the time and what the provider asked for
/// go in; the `DPoP` header's value comes out.
package struct DPoPProof: Sendable {
    /// The request's method (`htm`).
    package var method: String
    /// The request's URL; `htu` is this without its query and fragment.
    package var url: URL
    /// When the proof is made (`iat`, whole seconds).
    package var issuedAt: Date
    /// The proof's unique id (`jti`).
    package var id: String
    /// The access token the request carries, hashed into `ath`; `nil` at the token endpoint.
    package var accessToken: String?
    /// The provider's or resource server's current nonce, when it gave one.
    package var nonce: String?

    /// A proof for `method` `url` made at `issuedAt`, with a fresh random id.
    package init(
        method: String, url: URL, issuedAt: Date, accessToken: String? = nil, nonce: String? = nil,
        id: String = UUID().uuidString
    ) {
        self.method = method
        self.url = url
        self.issuedAt = issuedAt
        self.accessToken = accessToken
        self.nonce = nonce
        self.id = id
    }

    /// `htu`: the URL without its query and fragment (RFC 9449 §4.2).
    package var targetURI: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.query = nil
        components.fragment = nil
        return components.string ?? url.absoluteString
    }

    /// The claims the proof carries, as the JSON text signed (keys sorted).
    package var claimsJSON: String {
        let iat = ProviderNumbers.integer(
            issuedAt.timeIntervalSince1970.rounded(.down), fallback: 0, in: Int.min...Int.max)
        var members: [String] = []
        if let accessToken {
            members.append(#""ath":"# + Self.quoted(Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8))))))
        }
        members += [#""htm":"# + Self.quoted(method), #""htu":"# + Self.quoted(targetURI), #""iat":\#(iat)"#]
        members.append(#""jti":"# + Self.quoted(id))
        if let nonce { members.append(#""nonce":"# + Self.quoted(nonce)) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The signed proof, the `DPoP` header's value.
    package func signed(with key: DPoPKey) throws(ProviderError) -> String {
        let input = key.encodedHeader + "." + Base64URL.encode(Data(claimsJSON.utf8))
        do {
            return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
        } catch {
            throw ProviderError(.unsupported, reason: "A DPoP proof could not be signed.")
        }
    }

    /// `text` as a JSON string (RFC 8259 §7): quotes, backslashes and control characters escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out +=
                    "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
