import Foundation
import JWTKit
import Logging

/// How a provider verifies its ID tokens, written once: its keys first (so an unreachable JWKS
/// is the retryable network failure it is, not a rejected token), then the verifier's checks,
/// with a rejection logged by its reason and reported as ``ProviderError/Code/idTokenRejected``.
struct IDTokenChecks: Sendable {
    let clientID: String
    let algorithms: Set<JWSAlgorithm>
    let leeway: TimeInterval
    let keys: JWKSCache
    let logger: Logger

    /// Checks with a key set that `fetch` fetches, once for many callers (see ``JWKSCache``), on
    /// the provider's clock.
    init(
        clientID: String, algorithms: Set<JWSAlgorithm>, leeway: TimeInterval, logger: Logger,
        clock: any LatchkeyClock,
        fetch: @escaping @Sendable (_ newerThan: Date?) async throws(ProviderError) -> JWKSCache.Fetched
    ) {
        self.clientID = clientID
        self.algorithms = algorithms
        self.leeway = leeway
        self.keys = JWKSCache(clock: clock, fetch: fetch)
        self.logger = logger
    }

    func verify(
        _ idToken: String, issuer: String, nonce: String? = nil, accessToken: String? = nil, subject: String? = nil,
        now: Date
    ) async throws(ProviderError) -> IDTokenClaims {
        _ = try await keys.keys()
        let verifier = IDTokenVerifier(issuer: issuer, clientID: clientID, algorithms: algorithms, leeway: leeway)
        let keys = self.keys
        do {
            return try await verifier.verify(
                idToken, nonce: nonce, accessToken: accessToken, subject: subject, now: now,
                keys: { refetch in try await keys.keys(refetch: refetch) })
        } catch {
            logger.debug("ID token rejected", metadata: ["reason": "\(error.reason.rawValue)"])
            throw ProviderError(
                .idTokenRejected, endpoint: .token, reason: "The ID token was rejected.", underlying: error)
        }
    }

    /// The subject a refreshed ID token must keep: the one of the token signed in before.
    static func subject(of previous: Token?) -> String? {
        previous?.idToken.flatMap(UnverifiedClaims.read)?["sub"]?.stringValue
    }
}
