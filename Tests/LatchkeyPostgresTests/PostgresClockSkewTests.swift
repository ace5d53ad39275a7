import Crypto
import Foundation
import Latchkey
import LatchkeyPostgres
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// The fleet's lease is judged by one clock, the database's: an instance whose own clock is a
/// minute off neither takes a live lease nor keeps a dead one.
@Suite("PostgreSQL store: the lease by the database's clock", .enabled(if: PostgresServer.isEnabled))
struct PostgresClockSkewTests {
    @Test(
        "an instance whose clock is 60 s ahead (or whose holder's is 60 s behind) waits for a live lease",
        arguments: [(holder: 0.0, waiter: 60.0), (holder: -60.0, waiter: 0.0)])
    func skewedInstance(skew: (holder: Double, waiter: Double)) async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = SymmetricKey(size: .bits256)
        let alice = try await PostgresServer.withStore(key: key, url: url) { _, storage, _ in
            let alice = PostgresReadCacheTests.credential("alice", token: "at-1")
            try await storage.insert(alice)
            return alice.id
        }
        try await PostgresServer.withClient(url) { first in
            try await PostgresServer.withClient(url) { second in
                let holder = try await PostgresCredentialStorage.open(
                    client: first, key: key, timeout: PostgresServer.openTimeout)
                let waiter = try await PostgresCredentialStorage.open(
                    client: second, key: key, timeout: PostgresServer.openTimeout)
                let holderTerms = LeaseTerms(
                    duration: .seconds(30), clock: TestClock(origin: Date().addingTimeInterval(skew.holder)))
                let waiterTerms = LeaseTerms(
                    duration: .seconds(30), clock: TestClock(origin: Date().addingTimeInterval(skew.waiter)))
                let inside = NIOLockedValueBox(0)
                let peak = NIOLockedValueBox(0)
                let (entered, enter) = AsyncStream.makeStream(of: Void.self)
                try await withThrowingTaskGroup { group in
                    group.addTask {
                        try await holder.withCredentialLease(for: alice, terms: holderTerms) { _ in
                            let now = inside.withLockedValue {
                                $0 += 1
                                return $0
                            }
                            peak.withLockedValue { $0 = max($0, now) }
                            enter.yield()
                            // Long enough for the waiter to poll many times.
                            try? await Task.sleep(for: .milliseconds(1_500))
                            inside.withLockedValue { $0 -= 1 }
                        }
                    }
                    var signals = entered.makeAsyncIterator()
                    _ = await signals.next()
                    group.addTask {
                        try await waiter.withCredentialLease(for: alice, terms: waiterTerms) { _ in
                            let now = inside.withLockedValue {
                                $0 += 1
                                return $0
                            }
                            peak.withLockedValue { $0 = max($0, now) }
                            inside.withLockedValue { $0 -= 1 }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(peak.withLockedValue { $0 } == 1, "two instances held one credential's lease at once")
            }
        }
    }
}
