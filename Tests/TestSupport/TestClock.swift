public import Foundation
public import Latchkey
import NIOConcurrencyHelpers

/// The one clock the tests move by hand: a `LatchkeyClock` whose date and instants move only when
/// ``advance(by:)`` or ``advance(_:)`` is called, and whose sleepers wake when time passes their
/// deadline. Expiry, backoff, polling and time limits are tested without waiting.
public final class TestClock: LatchkeyClock {
    public struct Instant: InstantProtocol {
        public var offset: Duration

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (left: Instant, right: Instant) -> Bool { left.offset < right.offset }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())
    /// The date at the clock's zero instant.
    public let origin: Date

    /// A clock at `origin` (now, by default).
    public init(origin: Date = Date()) { self.origin = origin }

    public var now: Instant { state.withLockedValue { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public var date: Date {
        let offset = state.withLockedValue { $0.now.offset }
        return origin.addingTimeInterval(
            Double(offset.components.seconds) + Double(offset.components.attoseconds) / 1e18)
    }

    /// Sleeps until the clock is moved past `deadline`; a cancelled sleeper wakes at once with
    /// `CancellationError`, as the system's clocks do.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLockedValue { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Checked under the lock the cancellation handler takes, so a cancellation either
                // finds the sleeper or is seen here.
                let wake = state.withLockedValue { state -> Bool? in
                    if Task.isCancelled { return false }
                    if deadline <= state.now { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                switch wake {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let cancelled = state.withLockedValue { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward, waking every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Void, any Error>] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for continuation in woken { continuation.resume() }
    }

    /// Moves time forward by `seconds`.
    public func advance(_ seconds: TimeInterval) { advance(by: .milliseconds(Int64((seconds * 1_000).rounded()))) }

    /// How many tasks are asleep on this clock.
    public var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }
}

extension LatchkeyClock {
    /// The date as a closure, for components that take one (the development provider).
    public var dateSource: @Sendable () -> Date { { self.date } }
}
