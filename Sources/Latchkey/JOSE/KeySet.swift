import Foundation
import JWTKit
import Logging

/// A provider's JWK Set (RFC 7517 §5), read key by key. A key Latchkey cannot verify with —
/// another key type (`oct`, `OKP`), a curve it does not know (`secp256k1`), an algorithm it does
/// not know, a key for encryption (`"use": "enc"`) — is left out and logged by its `kid` and
/// `kty` (never its material), so that one such key does not make every sign-in and refresh
/// fail: verification fails only when no usable key matches the token (RFC 7517 §5: implementations
/// "SHOULD ignore JWKs within a JWK Set that use 'kty' … values that are not understood").
enum KeySet {
    /// The usable keys of `body`.
    /// - Throws: ``ProviderError/Code/invalidResponse`` when `body` is not a JWK Set (a JSON
    ///   object with a `keys` array).
    static func decode(_ body: Data, logger: Logger) throws(ProviderError) -> JWKS {
        let entries: [Entry]
        do {
            entries = try JSONDecoder().decode(Entries.self, from: body).keys
        } catch {
            throw ProviderError(.invalidResponse, endpoint: .jwks, reason: "The JWKS is not a JWK Set.")
        }
        var keys: [JWK] = []
        for entry in entries {
            if let key = entry.key, entry.use == nil || entry.use == "sig", usable(key) {
                keys.append(key)
            } else {
                logger.notice(
                    "a key of the provider's key set cannot be used; it is left out",
                    metadata: ["kid": "\(entry.kid ?? "none")", "kty": "\(entry.kty ?? "none")"])
            }
        }
        return JWKS(keys: keys)
    }

    /// Whether `key` is one ID tokens can be verified with: RSA with its modulus and exponent, or
    /// EC on P-256, P-384 or P-521 with both coordinates.
    private static func usable(_ key: JWK) -> Bool {
        switch key.keyType {
        case .rsa: key.modulus != nil && key.exponent != nil
        case .ecdsa:
            [.ecdsa(.p256), .ecdsa(.p384), .ecdsa(.p521)].contains(key.curve) && key.x != nil && key.y != nil
        default: false
        }
    }

    private struct Entries: Decodable {
        var keys: [Entry]
    }

    /// One member of `keys`: the key when jwt-kit can read it, and what names it in a log.
    private struct Entry: Decodable {
        var key: JWK?
        var kid: String?
        var kty: String?
        var use: String?

        private enum CodingKeys: String, CodingKey { case kid, kty, use }

        init(from decoder: any Decoder) throws {
            key = try? JWK(from: decoder)
            let container = try? decoder.container(keyedBy: CodingKeys.self)
            kid = try? container?.decodeIfPresent(String.self, forKey: .kid)
            kty = try? container?.decodeIfPresent(String.self, forKey: .kty)
            use = try? container?.decodeIfPresent(String.self, forKey: .use)
        }
    }
}
