package import Foundation
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
    /// A key set as fetched (or as the store kept it): when, and until when it may be used.
    package struct Fetched: Sendable {
        /// The keys.
        package let set: JWKS
        /// When they were fetched.
        package let fetchedAt: Date
        /// Until when the provider said they may be used.
        package let expiresAt: Date

        package init(set: JWKS, fetchedAt: Date, expiresAt: Date) {
            self.set = set
            self.fetchedAt = fetchedAt
            self.expiresAt = expiresAt
        }
    }

    /// Gets a key set fetched after the date given, when one is (a copy kept in the store by
    /// another process that fetched since), else any fresh one.
    private let fetch: @Sendable (_ newerThan: Date?) async throws(ProviderError) -> Fetched
    private let clock: any LatchkeyClock
    private let timeToLive: TimeInterval
    private let minimumRefetchInterval: TimeInterval
    private var cached: Fetched?
    private var lastRefetch: Date?
    private let flight = SingleFlight<Fetched, ProviderError>()

    /// Creates a cache over `fetch`.
    package init(
        clock: any LatchkeyClock, timeToLive: Duration = .seconds(3_600),
        minimumRefetchInterval: Duration = .seconds(60),
        fetch: @escaping @Sendable (_ newerThan: Date?) async throws(ProviderError) -> Fetched
    ) {
        self.clock = clock
        self.timeToLive = LeaseTerms(duration: timeToLive).seconds
        self.minimumRefetchInterval = LeaseTerms(duration: minimumRefetchInterval).seconds
        self.fetch = fetch
    }

    /// The key set: the cached one while it is fresh; a new one when there is none, it is too
    /// old (or past the expiry its provider gave), or `refetch` asks (an unknown `kid`) and the
    /// last refetch is old enough.
    package func keys(refetch: Bool = false) async throws(ProviderError) -> JWKS {
        var refetching = false
        if let cached {
            let now = clock.date
            let stale = now.timeIntervalSince(cached.fetchedAt) >= timeToLive || now >= cached.expiresAt
            refetching = refetch && lastRefetch.map { now.timeIntervalSince($0) >= minimumRefetchInterval } ?? true
            if !stale && !refetching { return cached.set }
        }
        let fetch = self.fetch
        let newerThan = cached?.fetchedAt
        // The set is kept before the flight ends: a caller that comes after it finds the set
        // instead of starting another fetch.
        let fetched = try await flight.run { () async -> Result<Fetched, ProviderError> in
            do throws(ProviderError) {
                let fetched = try await fetch(newerThan)
                await self.keep(fetched)
                return .success(fetched)
            } catch {
                return .failure(error)
            }
        }.result.get()
        if refetching { lastRefetch = clock.date }
        return fetched.set
    }

    private func keep(_ fetched: Fetched) {
        cached = fetched
    }
}
