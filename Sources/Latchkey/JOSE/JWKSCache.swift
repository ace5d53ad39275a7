package import JWTKit

/// A provider's key set, fetched once for many callers and kept for a while.
///
/// - Every caller waiting at the same time shares one fetch.
/// - The set is kept for `timeToLive`, then fetched again on the next use.
/// - A token whose `kid` is not in the set asks for a fresh one, but such refetches succeed at
///   most once every `minimumRefetchInterval`: a stream of tokens with made-up key ids cannot
///   make Latchkey hammer the provider. A refetch that failed (the provider was down) does not
///   count, so an outage never turns into a final "unknown key".
///
/// The clock is injected, so tests move time instead of waiting.
package actor JWKSCache<C: Clock> where C.Duration == Duration {
    private let fetch: @Sendable () async throws(ProviderError) -> JWKS
    private let clock: C
    private let timeToLive: Duration
    private let minimumRefetchInterval: Duration
    private var cached: (set: JWKS, fetchedAt: C.Instant)?
    private var lastRefetch: C.Instant?
    private var inFlight: Task<Result<JWKS, ProviderError>, Never>?

    /// Creates a cache over `fetch`.
    package init(
        clock: C, timeToLive: Duration = .seconds(3_600), minimumRefetchInterval: Duration = .seconds(60),
        fetch: @escaping @Sendable () async throws(ProviderError) -> JWKS
    ) {
        self.clock = clock
        self.timeToLive = timeToLive
        self.minimumRefetchInterval = minimumRefetchInterval
        self.fetch = fetch
    }

    /// The key set: the cached one while it is fresh; a new one when there is none, it is too
    /// old, or `refetch` asks (an unknown `kid`) and the last fetch is old enough.
    package func keys(refetch: Bool = false) async throws(ProviderError) -> JWKS {
        var refetching = false
        if let cached {
            let now = clock.now
            let stale = cached.fetchedAt.duration(to: now) >= timeToLive
            refetching = refetch && lastRefetch.map { $0.duration(to: now) >= minimumRefetchInterval } ?? true
            if !stale && !refetching { return cached.set }
        }
        if inFlight == nil {
            inFlight = Task { () async -> Result<JWKS, ProviderError> in
                do throws(ProviderError) {
                    return .success(try await self.fetch())
                } catch {
                    return .failure(error)
                }
            }
        }
        guard let task = inFlight else {
            throw ProviderError(.cancelled, endpoint: .jwks, reason: "The JWKS fetch stopped.")
        }
        let result = await task.value
        inFlight = nil
        let set = try result.get()
        cached = (set, clock.now)
        if refetching { lastRefetch = clock.now }
        return set
    }
}
