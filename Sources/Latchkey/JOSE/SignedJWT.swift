import Foundation
import JWTKit

/// The signature half of verifying a provider's JWT, written once for ID tokens and logout
/// tokens: parse, check the algorithm against an allow-list, find the key in the provider's JWKS
/// (fetching it once more for an unknown `kid`), and verify with that key's public half only.
/// The claims every such token has (`iss`, `aud`) are checked here too; the rest are the
/// caller's.
enum SignedJWT {
    /// Why the signature half, or the issuer and audience, failed. The raw values are the names
    /// of the ``TokenCheck`` values that report them.
    enum Failure: String, Error, Sendable {
        case tooLarge, malformed, algorithmNotAllowed, unknownKey, invalidSignature, issuerMismatch, audienceMismatch
    }

    /// `token`'s header and payload once it is no longer than ``IDTokenVerifier/maximumLength``,
    /// its signature verifies with a key of `keys`, its `iss` is `issuer` and its `aud` holds
    /// `clientID`.
    static func verify(
        _ token: String, issuer: String, clientID: String, algorithms: Set<JWSAlgorithm>,
        keys: @Sendable (_ refetch: Bool) async throws -> JWKS
    ) async throws(Failure) -> (header: JWTHeader, payload: IDTokenPayload) {
        guard token.utf8.count <= IDTokenVerifier.maximumLength else { throw .tooLarge }
        let verified = try await verify(token, as: IDTokenPayload.self, algorithms: algorithms, keys: keys)
        guard verified.payload.issuer?.value == issuer else { throw .issuerMismatch }
        guard verified.payload.audience?.value.contains(clientID) == true else { throw .audienceMismatch }
        return verified
    }

    /// `token`'s header and payload once its signature verifies with a key of `keys`.
    private static func verify<Payload: JWTPayload>(
        _ token: String, as payload: Payload.Type, algorithms: Set<JWSAlgorithm>,
        keys: @Sendable (_ refetch: Bool) async throws -> JWKS
    ) async throws(Failure) -> (header: JWTHeader, payload: Payload) {
        let parsed: (header: JWTHeader, payload: Payload, signature: Data)
        do {
            parsed = try DefaultJWTParser().parse(Array(token.utf8), as: Payload.self)
        } catch {
            throw .malformed
        }
        guard let algorithm = parsed.header.alg, algorithms.contains(JWSAlgorithm(rawValue: algorithm)) else {
            throw .algorithmNotAllowed
        }
        // A signature that fails under a key the set names is checked once more under a set
        // fetched again (rate-limited by the cache): a provider that replaced a key under the
        // same `kid` is not refused until the kept set runs out.
        for refetch in [false, true] {
            var jwk = try await key(for: parsed.header.kid, algorithm: algorithm, refetching: refetch, keys: keys)
            guard let expected = JWK.Algorithm(rawValue: algorithm), jwk.algorithm == nil || jwk.algorithm == expected
            else { throw .algorithmNotAllowed }
            jwk.algorithm = expected
            // A key set publishes public keys; a private part in it is never used (building a
            // private RSA key from a hostile one traps inside swift-crypto).
            (jwk.privateExponent, jwk.prime1, jwk.prime2) = (nil, nil, nil)
            do {
                let collection = try await JWTKeyCollection().add(jwk: jwk, isDefault: true)
                _ = try await collection.verify(token, as: Payload.self)
                return (parsed.header, parsed.payload)
            } catch {
                continue
            }
        }
        throw .invalidSignature
    }

    /// The key `kid` names in the set (fetching the set again once for an unknown `kid`, or
    /// from the start when `refetching`).
    private static func key(
        for kid: String?, algorithm: String, refetching: Bool, keys: @Sendable (Bool) async throws -> JWKS
    ) async throws(Failure) -> JWK {
        let family: JWK.KeyType = algorithm.hasPrefix("ES") ? .ecdsa : .rsa
        for refetch in refetching ? [true] : [false, true] {
            let set: JWKS
            do { set = try await keys(refetch) } catch { throw .unknownKey }
            let candidates = set.keys.filter { $0.keyType == family && ($0.keyIdentifier?.string == kid || kid == nil) }
            if kid != nil, let match = candidates.first { return match }
            if kid == nil, candidates.count == 1, let only = candidates.first { return only }
            if set.keys.contains(where: { $0.keyIdentifier?.string == kid && kid != nil }) {
                throw .algorithmNotAllowed  // the key exists but is of another type
            }
        }
        throw .unknownKey
    }
}
