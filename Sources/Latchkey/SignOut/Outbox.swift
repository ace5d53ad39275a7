public import Foundation
import Logging
import Tracing

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
    /// How long an entry stays claimed by this drain: drainers sharing the storage (processes,
    /// a fleet's instances) leave it alone meanwhile, and take it over when this drain died
    /// before trying it. Keep it well above a provider's request timeout.
    public var claimDuration: Duration

    /// Creates options.
    public init(
        includeNotDue: Bool = false, maximumConcurrency: Int = 8, timeLimit: Duration? = nil,
        backoff: OutboxBackoff = .default, claimDuration: Duration = .seconds(120)
    ) {
        self.includeNotDue = includeNotDue
        self.maximumConcurrency = max(1, maximumConcurrency)
        self.timeLimit = timeLimit
        self.backoff = backoff
        self.claimDuration = claimDuration
    }
}

/// What a drain of the outbox did.
public struct DrainReport: Sendable, CustomStringConvertible {
    /// Entries revoked and removed.
    public var revoked: Int = 0
    /// Entries that failed again and wait for their next attempt.
    public var failed: Int = 0
    /// Entries dropped because their token has expired anyway (by the expiry the provider stated).
    public var dropped: Int = 0
    /// Entries not tried (not due, or past the time limit).
    public var notDue: Int = 0
    /// Due entries another drainer sharing the storage was trying (or had just tried) meanwhile.
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
    public var remaining: Int { failed + notDue }

    /// Whether everything that could be tried went through and nothing needs a person.
    public var isClean: Bool { failed == 0 && permanent == 0 && damaged.isEmpty && storageError == nil }

    public var description: String {
        var text = "revoked \(revoked), failed \(failed), dropped \(dropped), not due \(notDue)"
        if claimedElsewhere > 0 { text += ", claimed by another drainer \(claimedElsewhere)" }
        if permanent > 0 { text += ", failed permanently \(permanent)" }
        if !damaged.isEmpty { text += ", damaged \(damaged.count)" }
        if let storageError { text += "; the outbox could not be used: \(storageError)" }
        return text
    }
}

extension CredentialStore {
    /// The entries of the revocation outbox, the earliest due first.
    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await outbox.outboxEntries()
    }

    /// Retries the revocations waiting in the outbox: due entries only (unless asked), with
    /// bounded concurrency, each claimed first (``OutboxStorage/claimOutboxEntries(dueBy:limit:now:for:)``)
    /// so that drainers sharing the storage send every revocation once. A success removes the entry; a failure sets the next attempt with
    /// exponential backoff, jitter and the provider's `Retry-After`; a failure a retry cannot fix
    /// (``ProviderError/isRetryable`` false, or no provider registered) marks the entry
    /// ``OutboxEntry/failedPermanently``: it is no longer tried and stays until
    /// ``dropOutboxEntry(_:)``. An entry is dropped unsent only once its token has expired by
    /// the expiry the provider stated; a damaged entry is reported and left as it is.
    /// Providers must be registered with ``register(_:)``.
    public func drainOutbox(_ options: DrainOptions = DrainOptions()) async -> DrainReport {
        await withSpan(LatchkeyTelemetry.SpanName.drainOutbox) { span in
            let report = await drainUntraced(options)
            span.attributes["latchkey.outbox.revoked"] = report.revoked
            span.attributes["latchkey.outbox.failed"] = report.failed + report.permanent
            if !report.isClean { span.setStatus(SpanStatus(code: .error)) }
            return report
        }
    }

    private func drainUntraced(_ options: DrainOptions) async -> DrainReport {
        var report = DrainReport()
        let entries: [OutboxEntry]
        do {
            entries = try await outbox.outboxEntries()
            report.damaged = try await outbox.damagedOutboxEntries()
        } catch {
            report.storageError = error
            return report
        }
        for damaged in report.damaged {
            logger.error("outbox entry damaged; left as it is", metadata: ["entry": "\(damaged.id)"])
        }
        let date = now()
        // What this drain removed, for the depth and age it reports when done.
        var removed: Set<UUID> = []
        var due = 0
        for entry in entries {
            if let expiry = entry.tokenExpiresAt, expiry <= date {
                do {
                    try await outbox.removeOutboxEntry(entry.id)
                    logger.debug("outbox entry dropped: its token has expired", metadata: ["entry": "\(entry.id)"])
                    Telemetry.outboxRevocation(entry.kind, .expired)
                    removed.insert(entry.id)
                    report.dropped += 1
                } catch {
                    report.storageError = error
                }
            } else if entry.failedPermanently {
                report.permanent += 1
            } else if options.includeNotDue || entry.nextAttemptAt <= date {
                due += 1
            } else {
                report.notDue += 1
            }
        }
        // Due entries are claimed a batch at a time, so that drainers sharing the storage split
        // them, each revocation is sent once, and a claim never outlives the work it covers.
        var attempted = 0
        var outOfTime = false
        func timeIsUp() -> Bool {
            guard let limit = options.timeLimit else { return false }
            return clock.date.timeIntervalSince(date)
                > Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        }
        while attempted < due {
            if timeIsUp() {
                outOfTime = true
                break
            }
            let batch: [OutboxEntry]
            do {
                batch = try await outbox.claimOutboxEntries(
                    dueBy: options.includeNotDue ? .distantFuture : date, limit: options.maximumConcurrency * 4,
                    now: now(), for: options.claimDuration)
            } catch {
                report.storageError = error
                break
            }
            guard !batch.isEmpty else { break }
            attempted += batch.count
            let outcome = await revoke(batch, options: options, timeIsUp: timeIsUp)
            report.peakConcurrency = max(report.peakConcurrency, outcome.peak)
            report.notDue += outcome.notStarted.count
            for entry in outcome.notStarted {
                // Past the time limit: given back at once, not after the claim runs out.
                try? await outbox.updateOutboxEntry(entry)
            }
            await record(outcome.results, options: options, into: &report, removed: &removed)
        }
        if due > attempted {
            if outOfTime { report.notDue += due - attempted } else { report.claimedElsewhere += due - attempted }
        }
        let left = entries.filter { !removed.contains($0.id) }
        Telemetry.outbox(
            depth: left.count + report.damaged.count, oldest: left.map(\.createdAt).min(), now: now())
        return report
    }

    /// Sends the revocations of `batch`, at most `maximumConcurrency` at once, starting none
    /// once the time is up.
    private func revoke(
        _ batch: [OutboxEntry], options: DrainOptions, timeIsUp: () -> Bool
    ) async -> (results: [(OutboxEntry, ProviderError?)], peak: Int, notStarted: [OutboxEntry]) {
        let providers = batch.map { provider(for: $0.provider) }
        return await withTaskGroup(of: (OutboxEntry, ProviderError?).self) { group in
            var next = 0
            var running = 0
            var peak = 0
            var results: [(OutboxEntry, ProviderError?)] = []
            while running < options.maximumConcurrency, next < batch.count, !timeIsUp() {
                Self.addRevocation(of: batch[next], provider: providers[next], to: &group)
                next += 1
                running += 1
                peak = max(peak, running)
            }
            for await result in group {
                running -= 1
                results.append(result)
                if next < batch.count, !timeIsUp() {
                    Self.addRevocation(of: batch[next], provider: providers[next], to: &group)
                    next += 1
                    running += 1
                    peak = max(peak, running)
                }
            }
            return (results, peak, Array(batch[next...]))
        }
    }

    /// Removes the entries that were revoked, and sets the next attempt of those that failed.
    private func record(
        _ results: [(OutboxEntry, ProviderError?)], options: DrainOptions, into report: inout DrainReport,
        removed: inout Set<UUID>
    ) async {
        for (entry, error) in results {
            do {
                if let error {
                    var updated = entry
                    updated.attempts += 1
                    updated.lastError = error.description
                    updated.failedPermanently = !error.isRetryable
                    updated.nextAttemptAt = now().addingTimeInterval(
                        options.backoff.delay(afterAttempts: updated.attempts, retryAfter: error.retryAfter))
                    try await outbox.updateOutboxEntry(updated)
                    logger.debug(
                        "outbox revocation failed",
                        metadata: [
                            "entry": "\(entry.id)", "token": "\(entry.kind)", "attempts": "\(updated.attempts)",
                            "permanent": "\(updated.failedPermanently)", "nextAttemptAt": "\(updated.nextAttemptAt)",
                            "error": "\(error)",
                        ])
                    if updated.failedPermanently { report.permanent += 1 } else { report.failed += 1 }
                    Telemetry.outboxRevocation(entry.kind, updated.failedPermanently ? .failedPermanently : .failed)
                    report.errors[entry.id] = error
                } else {
                    try await outbox.removeOutboxEntry(entry.id)
                    logger.debug(
                        "outbox revocation done", metadata: ["entry": "\(entry.id)", "token": "\(entry.kind)"])
                    Telemetry.outboxRevocation(entry.kind, .revoked)
                    removed.insert(entry.id)
                    report.revoked += 1
                }
            } catch {
                report.storageError = error
            }
        }
    }

    /// Removes an outbox entry on purpose, revoked or not: an entry that failed permanently, or
    /// one whose provider is gone. Its token stays valid at the provider until it expires.
    /// - Returns: whether there was such an entry (a damaged one is removed too).
    @discardableResult
    public func dropOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool {
        let readable = try await outbox.outboxEntries().contains { $0.id == id }
        let damaged = try await outbox.damagedOutboxEntries().contains { $0.id == id.uuidString }
        guard readable || damaged else { return false }
        try await outbox.removeOutboxEntry(id)
        logger.debug("outbox entry dropped on purpose", metadata: ["entry": "\(id)"])
        return true
    }

    private static func addRevocation(
        of entry: OutboxEntry, provider: (any IdentityProvider)?,
        to group: inout TaskGroup<(OutboxEntry, ProviderError?)>
    ) {
        group.addTask {
            guard let provider else {
                return (entry, ProviderError(.unsupported, reason: "No provider is registered for \(entry.provider)."))
            }
            do throws(ProviderError) {
                try await provider.revoke(entry.token, kind: entry.kind)
                return (entry, nil)
            } catch {
                return (entry, error)
            }
        }
    }
}
