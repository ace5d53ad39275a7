package import Foundation

extension SealedRecords {
    /// When a claim made at `now` for `duration` runs out, in the seconds a backend stores.
    package static func claimedUntil(now: Date, for duration: Duration) -> Double {
        now.timeIntervalSinceReferenceDate + LeaseTerms(duration: duration).seconds
    }
}
