import Crypto
import Foundation
import JWTKit
import _CryptoExtras

/// A claim value of a token the provider signs.
enum Claim: Sendable, Codable, Hashable {
    case string(String)
    case number(Int)
    /// A number that is not an `Int` (a fraction, or beyond `Int`'s range).
    case decimal(Double)
    case strings([String])
    case bool(Bool)
    /// An object of claims (`cnf`, RFC 7800).
    indirect case object([String: Claim])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int.self) {
            self = .number(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([String].self) {
            self = .strings(value)
        } else {
            self = .object(try container.decode([String: Claim].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .decimal(let value): try container.encode(value)
        case .strings(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var number: Int? { if case .number(let value) = self { value } else { nil } }
    /// The audience as a list, whether it was sent as a string or an array.
    var strings: [String] {
        switch self {
        case .string(let value): [value]
        case .strings(let values): values
        default: []
        }
    }
}

/// The claims of a JWT the provider signs or reads back. Checks of expiry and audience are the
/// endpoints' business, so `verify` only lets the signature check through.
struct ClaimSet: JWTPayload, Sendable {
    var claims: [String: Claim]

    init(_ claims: [String: Claim]) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        claims = try decoder.singleValueContainer().decode([String: Claim].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(claims)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    subscript(_ name: String) -> Claim? { claims[name] }
}

/// The provider's signing keys: one RS256 and one ES256 key in use, plus rotated-out keys kept
/// in the JWKS for a grace period so that tokens they signed still verify.
actor SigningKeys {
    private struct Entry {
        var kid: String
        var algorithm: String
        var jwk: JWK
        var retiredAt: Date?
    }

    private let collection = JWTKeyCollection()
    private var entries: [Entry] = []
    private var generation = 0
    private let gracePeriod: TimeInterval

    init(gracePeriod: TimeInterval, initial: DevProviderSigningKeys) async throws {
        self.gracePeriod = gracePeriod
        try await addGeneration(initial)
    }

    /// Puts a new key pair in use; the previous pair stays in the JWKS for the grace period.
    func rotate(now: Date) async throws {
        for index in entries.indices where entries[index].retiredAt == nil {
            entries[index].retiredAt = now
        }
        try await addGeneration(DevProviderSigningKeys.generate())
        for entry in entries where entry.retiredAt.map({ now.timeIntervalSince($0) > gracePeriod }) ?? false {
            await collection.remove(kid: JWKIdentifier(string: entry.kid))
        }
        entries.removeAll { $0.retiredAt.map { now.timeIntervalSince($0) > gracePeriod } ?? false }
    }

    /// The public keys as a JWK Set (RFC 7517 §5), dropping keys past their grace period.
    func jwks(now: Date) -> PublishedKeySet {
        let live = entries.filter { $0.retiredAt.map { now.timeIntervalSince($0) <= gracePeriod } ?? true }
        return PublishedKeySet(keys: live.map { PublishedKey(jwk: $0.jwk) })
    }

    /// The key identifier in use for `algorithm`.
    func currentKid(_ algorithm: String) -> String? {
        entries.first { $0.algorithm == algorithm && $0.retiredAt == nil }?.kid
    }

    /// Signs `claims` with the current key for `algorithm` (`RS256` or `ES256`).
    func sign(_ claims: ClaimSet, algorithm: String, type: String) async throws -> String {
        guard let kid = currentKid(algorithm) else { throw ProviderKeyError.unknownAlgorithm }
        var header = JWTHeader()
        header.typ = type
        header.alg = algorithm
        return try await collection.sign(claims, kid: JWKIdentifier(string: kid), header: header)
    }

    /// The claims of a JWT this provider signed with a key still in its JWKS.
    func verify(_ token: String, now: Date) async throws -> ClaimSet {
        guard token.utf8.count < 16_384 else { throw ProviderKeyError.invalidToken }
        let liveKids = Set(jwks(now: now).keys.compactMap { $0.jwk.keyIdentifier?.string })
        let claims = try await collection.verify(token, as: ClaimSet.self)
        // jwt-kit picks the key by `kid`; refuse keys past their grace period.
        guard let kid = try Self.kid(of: token), liveKids.contains(kid) else { throw ProviderKeyError.invalidToken }
        return claims
    }

    private static func kid(of token: String) throws -> String? {
        guard let first = token.split(separator: ".").first,
            let data = Data(base64URL: String(first)),
            let header = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return header["kid"] as? String
    }

    private func addGeneration(_ keys: DevProviderSigningKeys) async throws {
        generation += 1
        let rsaKid = "rs256-\(generation)-\(UUID().uuidString.prefix(8).lowercased())"
        let ecKid = "es256-\(generation)-\(UUID().uuidString.prefix(8).lowercased())"
        let (rsa, ec) = (keys.rsa, keys.ec)
        await collection.add(rsa: rsa, digestAlgorithm: .sha256, kid: JWKIdentifier(string: rsaKid))
        await collection.add(ecdsa: ec, kid: JWKIdentifier(string: ecKid))
        let primitives = try rsa.publicKey.getKeyPrimitives()
        entries.append(
            Entry(
                kid: rsaKid, algorithm: "RS256",
                jwk: .rsa(
                    .rs256, identifier: JWKIdentifier(string: rsaKid), modulus: primitives.modulus.base64URLEncoded,
                    exponent: primitives.publicExponent.base64URLEncoded)))
        guard let parameters = ec.publicKey.parameters else { throw ProviderKeyError.unknownAlgorithm }
        entries.append(
            Entry(
                kid: ecKid, algorithm: "ES256",
                jwk: .ecdsa(
                    .es256, identifier: JWKIdentifier(string: ecKid), x: parameters.x, y: parameters.y, curve: .p256)))
    }
}

/// A JWK Set of jwt-kit's JWKs, as published.
struct PublishedKeySet: Encodable, Sendable {
    var keys: [PublishedKey]
}

/// A public key as published: jwt-kit's JWK, marked for signatures (`"use": "sig"`, RFC 7517
/// §4.2), which jwt-kit's type does not carry.
struct PublishedKey: Encodable, Sendable {
    var jwk: JWK

    private enum Keys: String, CodingKey { case use }

    func encode(to encoder: any Encoder) throws {
        try jwk.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode("sig", forKey: .use)
    }
}

/// A development provider's first RS256 and ES256 signing keys.
///
/// Generating a 2048-bit RSA key takes a noticeable fraction of a second. A test process that
/// starts many providers can generate one set and pass it to each
/// (``DevProvider/start(configuration:signingKeys:host:port:adminToken:logger:now:)``); every provider
/// still has its own issuer, so a token one of them signed is refused by the others' clients.
/// Keys made by ``DevProvider/rotateKeys()`` are always new.
public struct DevProviderSigningKeys: Sendable {
    let rsa: JWTKit.Insecure.RSA.PrivateKey
    let ec: ES256PrivateKey

    /// Generates a new RSA 2048 and P-256 key pair.
    public static func generate() throws -> DevProviderSigningKeys {
        DevProviderSigningKeys(
            rsa: try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)),
            ec: ES256PrivateKey())
    }
}

enum ProviderKeyError: Error {
    case unknownAlgorithm
    case invalidToken
}

extension Data {
    /// Unpadded base64url (RFC 4648 §5).
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
