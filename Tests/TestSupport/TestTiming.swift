import Foundation

/// Deadlines of the few tests that must wait for a timeout, stretched on slow runs.
///
/// `LATCHKEY_TEST_SLOWDOWN=K` multiplies them by K: the thread-sanitizer pass runs everything
/// several times slower, and a request timeout that is generous on a plain build would fire
/// there before the server could answer. Tests never assert that something was fast; speed
/// lives in the benchmark suite.
public enum TestTiming {
    /// The factor, 1 unless `LATCHKEY_TEST_SLOWDOWN` says otherwise.
    public static let slowdown: Double = {
        let value = ProcessInfo.processInfo.environment["LATCHKEY_TEST_SLOWDOWN"].flatMap(Double.init) ?? 1
        return max(1, value)
    }()

    /// `duration` times the slowdown.
    public static func scaled(_ duration: Duration) -> Duration { duration * slowdown }

    /// `milliseconds` times the slowdown.
    public static func scaled(milliseconds: Int) -> Int { Int((Double(milliseconds) * slowdown).rounded()) }

    /// A test's time limit of `minutes`, times the slowdown, rounded up: a limit that proves a
    /// wait ends (a timeout, a lease's deadline) must not fire first on a slow run.
    public static func minutes(_ minutes: Int) -> Int { Int((Double(minutes) * slowdown).rounded(.up)) }
}
