import Crypto
import Foundation
import HTTPTypes

/// The provider's own reading of a DPoP proof (RFC 9449 §4.3), written apart from the client's
/// proofs so that a mistake in one is not hidden by the same mistake in the other.
struct DPoPCheck: Sendable {
    /// What a valid proof says.
    struct Proof: Sendable {
        /// The JWK SHA-256 thumbprint (RFC 7638) of the proof's key.
        var thumbprint: String
        /// The proof's `jti`.
        var id: String
        /// The proof's `nonce`, when it has one.
        var nonce: String?
    }

    /// How far `iat` may be from the provider's time, in seconds.
    var window: TimeInterval = 60

    /// Reads `proof` for a request of `method` to `url` (without query) at `now`, carrying
    /// `accessToken` when given; throws `invalid_dpop_proof` with the check that failed.
    func verify(_ proof: String, method: String, url: String, accessToken: String?, now: Date) throws(DPoPRefusal)
        -> Proof
    {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URL: String(parts[0])),
            let claimsData = Data(base64URL: String(parts[1])), let signature = Data(base64URL: String(parts[2])),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { throw DPoPRefusal("The DPoP proof is not a JWS.") }
        guard header["typ"] as? String == "dpop+jwt" else { throw DPoPRefusal("The DPoP proof's typ is not dpop+jwt.") }
        guard header["alg"] as? String == "ES256" else { throw DPoPRefusal("The DPoP proof's alg is not ES256.") }
        guard let jwk = header["jwk"] as? [String: Any], jwk["kty"] as? String == "EC",
            jwk["crv"] as? String == "P-256", jwk["d"] == nil, let x = jwk["x"] as? String, let y = jwk["y"] as? String,
            let xBytes = Data(base64URL: x), let yBytes = Data(base64URL: y),
            let key = try? P256.Signing.PublicKey(rawRepresentation: xBytes + yBytes)
        else { throw DPoPRefusal("The DPoP proof's jwk is not a public P-256 key.") }
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw DPoPRefusal("The DPoP proof's signature does not verify.") }
        guard claims["htm"] as? String == method else { throw DPoPRefusal("The DPoP proof's htm is not \(method).") }
        guard claims["htu"] as? String == url else { throw DPoPRefusal("The DPoP proof's htu is not \(url).") }
        guard let iat = claims["iat"] as? Double, abs(iat - now.timeIntervalSince1970) <= window else {
            throw DPoPRefusal("The DPoP proof's iat is missing or too far from now.")
        }
        guard let id = claims["jti"] as? String, !id.isEmpty else { throw DPoPRefusal("The DPoP proof has no jti.") }
        if let accessToken {
            let ath = Data(SHA256.hash(data: Data(accessToken.utf8))).base64URLEncoded
            guard claims["ath"] as? String == ath else {
                throw DPoPRefusal("The DPoP proof's ath is not the access token's hash.")
            }
        }
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Proof(
            thumbprint: Data(SHA256.hash(data: Data(canonical.utf8))).base64URLEncoded, id: id,
            nonce: claims["nonce"] as? String)
    }
}

/// A proof refused: why, and whether the refusal is for want of the current nonce.
struct DPoPRefusal: Error, Sendable {
    var reason: String
    /// The nonce to use, when the proof lacked the current one.
    var nonce: String?

    init(_ reason: String, nonce: String? = nil) {
        self.reason = reason
        self.nonce = nonce
    }

    /// The answer at the token endpoint (RFC 9449 §5.1, §8): 400 with `invalid_dpop_proof`, or
    /// `use_dpop_nonce` and the nonce.
    var atTokenEndpoint: OAuthFailure {
        var failure = OAuthFailure(nonce == nil ? "invalid_dpop_proof" : "use_dpop_nonce", reason)
        failure.dpopNonce = nonce
        return failure
    }

    /// The answer at a protected resource (RFC 9449 §7.1, §9): 401 with a DPoP challenge.
    var atResource: OAuthFailure {
        let error = nonce == nil ? "invalid_dpop_proof" : "use_dpop_nonce"
        var failure = OAuthFailure(
            error, reason, status: .unauthorized,
            challenge: #"DPoP algs="ES256", error="\#(error)", error_description="\#(reason)""#)
        failure.dpopNonce = nonce
        return failure
    }
}
