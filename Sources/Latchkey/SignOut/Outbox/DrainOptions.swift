public import Foundation

/// Exponential backoff with jitter for outbox retries.
public struct OutboxBackoff: Sendable, Hashable {
    /// The delay after the first failed attempt, in seconds.
    public var base: TimeInterval
    /// The longest delay, in seconds.
    public var maximum: TimeInterval

    /// Creates a backoff.
    public init(base: TimeInterval = 30, maximum: TimeInterval = 3_600) {
        self.base = base
        self.maximum = maximum
    }

    /// 30 s, doubling up to an hour.
    public static let `default` = OutboxBackoff()

    /// The delay before the next attempt: `base × 2^(attempts-1)`, capped, scaled by a random
    /// factor in 0.5…1 (so many devices do not retry in step), and never shorter than the
    /// provider's `Retry-After`.
    public func delay(
        afterAttempts attempts: Int, retryAfter: Duration?, jitter: Double = Double.random(in: 0.5...1)
    ) -> TimeInterval {
        let exponential = min(maximum, base * pow(2, Double(max(0, attempts - 1))))
        let delay = exponential * min(1, max(0.5, jitter))
        guard let retryAfter else { return delay }
        return max(delay, Double(retryAfter.components.seconds))
    }
}

/// How ``CredentialStore/drainOutbox(_:)`` works.
public struct DrainOptions: Sendable {
    /// Also try entries that are not due yet.
    public var includeNotDue: Bool
    /// At most this many revocations at once.
    public var maximumConcurrency: Int
    /// Start no new attempt after this long.
    public var timeLimit: Duration?
    /// The backoff for entries that fail again.
    public var backoff: OutboxBackoff
    /// Creates options.
    public init(
        includeNotDue: Bool = false, maximumConcurrency: Int = 8, timeLimit: Duration? = nil,
        backoff: OutboxBackoff = .default
    ) {
        self.includeNotDue = includeNotDue
        self.maximumConcurrency = max(1, maximumConcurrency)
        self.timeLimit = timeLimit
        self.backoff = backoff
    }
}

/// What a drain of the outbox did.
public struct DrainReport: Sendable, CustomStringConvertible {
    /// Entries sent and removed: revocations, global sign-outs, end-session requests.
    public var revoked: Int = 0
    /// Entries that failed again and wait for their next attempt.
    public var failed: Int = 0
    /// Entries dropped because their token has expired anyway (by the expiry the provider stated).
    public var dropped: Int = 0
    /// Entries not tried (not due, or past the time limit).
    public var notDue: Int = 0
    /// Entries waiting for another entry to go through first (a sign-out's revocations wait for
    /// its global sign-out).
    public var waiting: Int = 0
    /// Entries another drainer sharing the storage held meanwhile.
    public var claimedElsewhere: Int = 0
    /// Entries that failed in a way a retry cannot fix: no longer tried, kept until dropped.
    public var permanent: Int = 0
    /// Outbox records that cannot be read, by id; every other entry was tried.
    public var damaged: [DamagedRecord] = []
    /// Why the outbox could not be read or written, when it could not.
    public var storageError: StorageError?
    /// The most revocations that were under way at once.
    public var peakConcurrency: Int = 0
    /// Why entries failed, by entry.
    public var errors: [UUID: ProviderError] = [:]

    /// Entries still in the outbox that will be tried again.
    public var remaining: Int { failed + notDue + waiting }

    /// Whether everything that could be tried went through and nothing needs a person.
    public var isClean: Bool { failed == 0 && permanent == 0 && damaged.isEmpty && storageError == nil }

    public var description: String {
        var text = "sent \(revoked), failed \(failed), dropped \(dropped), not due \(notDue)"
        if waiting > 0 { text += ", waiting for another entry \(waiting)" }
        if claimedElsewhere > 0 { text += ", claimed by another drainer \(claimedElsewhere)" }
        if permanent > 0 { text += ", failed permanently \(permanent)" }
        if !damaged.isEmpty { text += ", damaged \(damaged.count)" }
        if let storageError { text += "; the outbox could not be used: \(storageError)" }
        return text
    }
}
