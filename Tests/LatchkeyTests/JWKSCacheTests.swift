import Foundation
import JWTKit
import Latchkey
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

@Suite("JWKS cache")
struct JWKSCacheTests {
    final class Counter: Sendable {
        let fetches = NIOLockedValueBox(0)
        let failing = NIOLockedValueBox(false)
    }

    static let set = JWKS(keys: [])

    func cache(_ counter: Counter, clock: TestClock) -> JWKSCache {
        JWKSCache(clock: clock, timeToLive: .seconds(3_600), minimumRefetchInterval: .seconds(60)) {
            _ async throws(ProviderError) -> JWKSCache.Fetched in
            counter.fetches.withLockedValue { $0 += 1 }
            if counter.failing.withLockedValue({ $0 }) {
                throw ProviderError(.httpStatus, endpoint: .jwks, reason: "down", status: 503)
            }
            try? await Task.sleep(for: .milliseconds(20))
            return JWKSCache.Fetched(set: Self.set, fetchedAt: clock.date, expiresAt: .distantFuture)
        }
    }

    @Test("many callers share one fetch; the set is kept for its time to live")
    func sharedAndKept() async throws {
        let counter = Counter()
        let clock = TestClock()
        let keys = cache(counter, clock: clock)
        try await withThrowingTaskGroup { group in
            for _ in 0..<50 { group.addTask { _ = try await keys.keys() } }
            try await group.waitForAll()
        }
        #expect(counter.fetches.withLockedValue { $0 } == 1)
        clock.advance(by: .seconds(3_599))
        _ = try await keys.keys()
        #expect(counter.fetches.withLockedValue { $0 } == 1)
        clock.advance(by: .seconds(1))
        _ = try await keys.keys()
        #expect(counter.fetches.withLockedValue { $0 } == 2, "stale after its time to live")
    }

    @Test("refetches for unknown key ids are rate-limited; a failed one does not count")
    func refetchRateLimit() async throws {
        let counter = Counter()
        let clock = TestClock()
        let keys = cache(counter, clock: clock)
        _ = try await keys.keys()
        _ = try await keys.keys(refetch: true)  // a rotated key, right after the first fetch: allowed
        #expect(counter.fetches.withLockedValue { $0 } == 2)
        for _ in 0..<20 { _ = try await keys.keys(refetch: true) }  // made-up key ids
        #expect(counter.fetches.withLockedValue { $0 } == 2)
        clock.advance(by: .seconds(60))
        counter.failing.withLockedValue { $0 = true }
        await #expect(throws: ProviderError.self) { _ = try await keys.keys(refetch: true) }
        counter.failing.withLockedValue { $0 = false }
        _ = try await keys.keys(refetch: true)  // the failure did not use up the allowance
        #expect(counter.fetches.withLockedValue { $0 } == 4)
    }

    @Test("only localhost, 127.0.0.0/8 and ::1 are loopback for plain http")
    func loopback() throws {
        for host in ["http://localhost:8080/x", "http://127.0.0.1/x", "http://127.200.3.4:1/x", "http://[::1]:9/x"] {
            #expect(EndpointSecurity.isAcceptable(try #require(URL(string: host))), "\(host)")
        }
        for host in [
            "http://evil.localhost/x", "http://localhost.evil.example/x", "http://128.0.0.1/x", "http://127.0.0/x",
            "http://127.0.0.1.evil.example/x", "http://[::2]/x", "http://0.0.0.0/x",
        ] {
            #expect(!EndpointSecurity.isAcceptable(try #require(URL(string: host))), "\(host)")
        }
    }
}
