import Foundation
package import JWTKit

/// A provider's key set, fetched once for many callers and kept for a while: the one key-set
/// holder of every provider's ID-token checks.
///
/// - Every caller waiting at the same time shares one fetch.
/// - The set is kept for `timeToLive`, then fetched again on the next use.
/// - A token whose `kid` is not in the set asks for a fresh one, but such refetches succeed at
///   most once every `minimumRefetchInterval`: a stream of tokens with made-up key ids cannot
///   make Latchkey hammer the provider. A refetch that failed (the provider was down) does not
///   count, so an outage never turns into a final "unknown key".
///
/// Time is the provider's clock, so tests move time instead of waiting.
package actor JWKSCache {
    private let fetch: @Sendable () async throws(ProviderError) -> JWKS
    private let clock: any LatchkeyClock
    private let timeToLive: TimeInterval
    private let minimumRefetchInterval: TimeInterval
    private var cached: (set: JWKS, fetchedAt: Date)?
    private var lastRefetch: Date?
    private let flight = SingleFlight<JWKS, ProviderError>()

    /// Creates a cache over `fetch`.
    package init(
        clock: any LatchkeyClock, timeToLive: Duration = .seconds(3_600),
        minimumRefetchInterval: Duration = .seconds(60),
        fetch: @escaping @Sendable () async throws(ProviderError) -> JWKS
    ) {
        self.clock = clock
        self.timeToLive = LeaseTerms(duration: timeToLive).seconds
        self.minimumRefetchInterval = LeaseTerms(duration: minimumRefetchInterval).seconds
        self.fetch = fetch
    }

    /// The key set: the cached one while it is fresh; a new one when there is none, it is too
    /// old, or `refetch` asks (an unknown `kid`) and the last refetch is old enough.
    package func keys(refetch: Bool = false) async throws(ProviderError) -> JWKS {
        var refetching = false
        if let cached {
            let now = clock.date
            let stale = now.timeIntervalSince(cached.fetchedAt) >= timeToLive
            refetching = refetch && lastRefetch.map { now.timeIntervalSince($0) >= minimumRefetchInterval } ?? true
            if !stale && !refetching { return cached.set }
        }
        let fetch = self.fetch
        let set = try await flight.run { () async -> Result<JWKS, ProviderError> in
            do throws(ProviderError) {
                return .success(try await fetch())
            } catch {
                return .failure(error)
            }
        }.result.get()
        cached = (set, clock.date)
        if refetching { lastRefetch = clock.date }
        return set
    }
}
