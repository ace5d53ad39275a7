public import Foundation

/// The time Latchkey goes by, injected: a `Clock` to measure and wait with (device-code polls,
/// backoff, time limits), that also tells the date, since a provider states expiries as dates.
///
/// ``SystemClock`` is the default. A test passes a clock it moves by hand, so expiry, backoff
/// and polling are tested without waiting.
public protocol LatchkeyClock: Clock, Sendable where Duration == Swift.Duration {
    /// The current date (wall-clock time).
    var date: Date { get }
}

/// The system's time: `ContinuousClock` to measure and wait, `Date()` for dates.
public struct SystemClock: LatchkeyClock {
    /// Creates the clock.
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }
    public var date: Date { Date() }

    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }
}

extension LatchkeyClock where Self == SystemClock {
    /// The system's time.
    public static var system: SystemClock { SystemClock() }
}
