import Crypto
public import Foundation
public import JWTKit

/// Verifies ID tokens (OpenID Connect Core §3.1.3.7): the signature through the provider's JWKS
/// with an algorithm from an allow-list, then iss, aud, azp, exp, iat, nbf, nonce and at_hash.
public struct IDTokenVerifier: Sendable {
    /// Tokens longer than this are rejected without being parsed.
    public static let maximumLength = 16 * 1024
    /// The algorithms accepted by default: RSA PKCS#1, RSA-PSS and ECDSA. Never `none` or HMAC.
    public static let defaultAlgorithms: Set<JWSAlgorithm> = [
        .rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .es256, .es384,
    ]

    /// The issuer the token must name.
    public var issuer: String
    /// The client the token must be for.
    public var clientID: String
    /// The accepted algorithms (HMAC and `none` are removed even if listed).
    public var algorithms: Set<JWSAlgorithm>
    /// Clock skew tolerated on `exp` and `iat`.
    public var leeway: TimeInterval

    /// Creates a verifier.
    public init(
        issuer: String, clientID: String, algorithms: Set<JWSAlgorithm> = defaultAlgorithms, leeway: TimeInterval = 60
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.algorithms = algorithms.filter(\.isAcceptable)
        self.leeway = leeway
    }

    /// Verifies `token`.
    ///
    /// - Parameters:
    ///   - nonce: the nonce sent in the authorization request, which the token must carry.
    ///   - accessToken: the access token issued with it, checked against `at_hash` when present.
    ///   - subject: the subject the token must have (on refresh, the one signed in before).
    ///   - now: the current time.
    ///   - keys: the provider's JWKS; called again with `true` once when the `kid` is unknown.
    public func verify(
        _ token: String,
        nonce: String? = nil,
        accessToken: String? = nil,
        subject: String? = nil,
        now: Date,
        keys: @Sendable (_ refetch: Bool) async throws -> JWKS
    ) async throws(IDTokenError) -> IDTokenClaims {
        let parsed: (header: JWTHeader, payload: IDTokenPayload)
        do {
            parsed = try await SignedJWT.verify(
                token, issuer: issuer, clientID: clientID, algorithms: algorithms, keys: keys)
        } catch {
            throw IDTokenError(error)
        }
        try check(
            parsed.payload, algorithm: parsed.header.alg ?? "", nonce: nonce, accessToken: accessToken,
            subject: subject, now: now)
        return IDTokenClaims(all: parsed.payload.all)
    }

    private func check(
        _ payload: IDTokenPayload, algorithm: String, nonce: String?, accessToken: String?, subject: String?,
        now: Date
    ) throws(IDTokenError) {
        let claims = payload.all
        let audience = payload.audience?.value ?? []
        let azp = claims["azp"]?.stringValue
        if audience.count > 1, azp == nil { throw IDTokenError(.authorizedPartyMismatch) }
        if let azp, azp != clientID { throw IDTokenError(.authorizedPartyMismatch) }
        guard let expiration = payload.expiration?.value, now < expiration.addingTimeInterval(leeway) else {
            throw IDTokenError(.expired)
        }
        guard let issuedAt = payload.issuedAt?.value, issuedAt <= now.addingTimeInterval(leeway) else {
            throw IDTokenError(.issuedInFuture)
        }
        if let notBefore = payload.notBefore?.value, notBefore > now.addingTimeInterval(leeway) {
            throw IDTokenError(.notYetValid)
        }
        if let nonce, claims["nonce"]?.stringValue != nonce { throw IDTokenError(.nonceMismatch) }
        if let subject, payload.subject?.value != subject { throw IDTokenError(.subjectMismatch) }
        if let accessToken, let atHash = claims["at_hash"]?.stringValue {
            guard Self.leftHalfHash(of: accessToken, algorithm: algorithm) == atHash else {
                throw IDTokenError(.accessTokenHashMismatch)
            }
        }
    }

    /// `at_hash`: the left half of the access token's hash with the JWS algorithm's hash function,
    /// base64url-encoded (OpenID Connect Core §3.1.3.6).
    static func leftHalfHash(of value: String, algorithm: String) -> String {
        let data = Data(value.utf8)
        let digest: Data
        switch algorithm.suffix(3) {
        case "384": digest = Data(SHA384.hash(data: data))
        case "512": digest = Data(SHA512.hash(data: data))
        default: digest = Data(SHA256.hash(data: data))
        }
        return Base64URL.encode(digest.prefix(digest.count / 2))
    }
}
