package import Foundation

/// The deadline of a lease holder's work: every request to a provider that the holder sends
/// (refresh, revocation, sign-out steps) must be answered, body included, before it, so that the
/// holder stores the answer while it still holds the credential's lease.
///
/// The store sets it for the body of a credential transaction (``CredentialStore/leaseDuration``
/// after the lease was taken, less a margin to store the answer in); every provider request
/// reads it, through the task, and cuts its own timeout to what is left. A request that would
/// have no time left is not sent.
package struct RequestDeadline: Sendable {
    /// When the holder's requests must be answered by.
    package let date: Date
    /// The clock the deadline goes by (the store's).
    package let clock: any LatchkeyClock

    /// The deadline of the current task, when it is working for a lease holder.
    @TaskLocal package static var current: RequestDeadline?

    /// The deadline of a lease of `duration` taken now by `clock`: the lease's end less a margin
    /// to store the answer in (a tenth of the lease, at most five seconds).
    package init(leaseOf duration: Duration, clock: any LatchkeyClock) {
        let seconds = LeaseTerms(duration: duration).seconds
        self.date = clock.date.addingTimeInterval(seconds - min(5, seconds / 10))
        self.clock = clock
    }

    /// The timeout of a request that starts now: `configured`, cut to what is left before the
    /// deadline; `nil` when nothing is left.
    package func timeout(cutting configured: Duration) -> Duration? {
        let left = date.timeIntervalSince(clock.date)
        guard left > 0.001 else { return nil }
        let available = Duration.milliseconds(Int64(min(left, 86_400 * 365) * 1_000))
        return min(configured, available)
    }
}
