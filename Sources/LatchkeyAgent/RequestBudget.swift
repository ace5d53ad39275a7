/// How many requests a socket answers in a while, as a pure value: a bucket of ``burst``
/// requests, refilled at ``perSecond`` (a token bucket). A forwarded socket's remote cannot make
/// the agent ask the store, or the provider, more often than that.
public struct RequestBudget: Sendable, Hashable {
    /// Requests answered per second, over time.
    public var perSecond: Double
    /// Requests answered at once, after a quiet while.
    public var burst: Double
    private var available: Double
    private var checked: Duration?

    /// A full bucket.
    public init(perSecond: Double, burst: Double) {
        self.perSecond = max(perSecond, 0)
        self.burst = max(burst, 1)
        self.available = self.burst
    }

    /// Whether a request at `now` (on a monotonic clock, from any start) is answered: it takes
    /// one from the bucket when there is one.
    public mutating func admit(at now: Duration) -> Bool {
        if let checked, now > checked {
            let elapsed =
                Double((now - checked).components.seconds) + Double((now - checked).components.attoseconds) / 1e18
            available = min(burst, available + elapsed * perSecond)
        }
        checked = max(checked ?? now, now)
        guard available >= 1 else { return false }
        available -= 1
        return true
    }
}
