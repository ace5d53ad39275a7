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

/// A provider that checks its ID tokens against the key set it fetches itself. Its checks are
/// made at first use and kept; their fetch holds the provider weakly, since the provider holds
/// them (a strong hold each way kept every provider that ever verified an ID token alive).
protocol ChecksIDTokens: Actor {
    /// The checks, once made.
    var idTokenChecks: IDTokenChecks? { get set }
    /// The client the tokens must be for.
    nonisolated var idTokenClientID: String { get }
    /// The accepted algorithms.
    nonisolated var idTokenAlgorithms: Set<JWSAlgorithm> { get }
    /// Clock skew tolerated on `exp`, `iat` and `nbf`.
    nonisolated var idTokenLeeway: TimeInterval { get }
    /// The provider's logger.
    var logger: Logger { get }
    /// The provider's clock.
    nonisolated var clock: any LatchkeyClock { get }
    /// The key set: a kept copy while it is valid (and newer than `newerThan`), else fetched.
    func fetchJWKS(newerThan: Date?) async throws(ProviderError) -> JWKSCache.Fetched
}

extension ChecksIDTokens {
    /// The ID-token checks, with this provider's key set (fetched once for many callers).
    var idTokens: IDTokenChecks {
        if let idTokenChecks { return idTokenChecks }
        let checks = IDTokenChecks(
            clientID: idTokenClientID, algorithms: idTokenAlgorithms, leeway: idTokenLeeway, logger: logger,
            clock: clock
        ) { [weak self] newerThan async throws(ProviderError) -> JWKSCache.Fetched in
            // Only the provider's own calls fetch, and they hold it: released, it fetches no more.
            guard let self else {
                throw ProviderError(.cancelled, endpoint: .jwks, reason: "The provider was released.")
            }
            return try await self.fetchJWKS(newerThan: newerThan)
        }
        idTokenChecks = checks
        return checks
    }
}
