public import Foundation
import Logging
import Tracing

extension CredentialStore {
    /// The entries of the outbox, the earliest due first.
    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await outbox.outboxEntries()
    }

    /// Sends the server steps waiting in the outbox — revocations, global sign-outs, end-session
    /// requests — due entries only (unless asked), with bounded concurrency, each claimed first
    /// (``OutboxStorage/claimOutboxEntries(dueBy:limit:now:for:)``) so that drainers sharing the
    /// storage send every step once. An entry that waits for another (``OutboxEntry/waitsFor``)
    /// is sent once that one has gone through.
    ///
    /// A success removes the entry; a failure sets the next attempt with exponential backoff,
    /// jitter and the provider's `Retry-After`; a failure a retry cannot fix
    /// (``ProviderError/isRetryable`` false, or no provider registered) marks the entry
    /// ``OutboxEntry/failedPermanently``: it is no longer tried and stays until
    /// ``dropOutboxEntry(_:)``. An entry is dropped unsent only once its token has expired by
    /// the expiry the provider stated; a damaged entry is reported and left as it is.
    /// Providers must be registered with ``register(_:)``.
    ///
    /// A queued global sign-out is sent with its access token while that is valid, else with
    /// one its refresh token gets (the rotated refresh token is sealed into the entry before it
    /// is used); a provider that turns out to have no global sign-out is left to the
    /// revocations and end-session request queued with it.
    public func drainOutbox(_ options: DrainOptions = DrainOptions()) async -> DrainReport {
        await withSpan(LatchkeyTelemetry.SpanName.drainOutbox) { span in
            var report = DrainReport()
            await drain(options, into: &report)
            span.attributes["latchkey.outbox.revoked"] = report.revoked
            span.attributes["latchkey.outbox.failed"] = report.failed + report.permanent
            if !report.isClean { span.setStatus(SpanStatus(code: .error)) }
            return report
        }
    }

    private func drain(_ options: DrainOptions, into report: inout DrainReport) async {
        let entries: [OutboxEntry]
        do {
            entries = try await outbox.outboxEntries()
            report.damaged = try await outbox.damagedOutboxEntries()
        } catch {
            report.storageError = error
            return
        }
        for damaged in report.damaged {
            logger.error("outbox entry damaged; left as it is", metadata: ["entry": "\(damaged.id)"])
        }
        let date = now()
        // What this drain removed, for the depth and age it reports when done.
        var removed: Set<UUID> = []
        var due: [OutboxEntry] = []
        for entry in entries {
            if let expiry = entry.tokenExpiresAt, expiry <= date {
                do {
                    try await outbox.removeOutboxEntry(entry.id)
                    logger.debug("outbox entry dropped: its token has expired", metadata: ["entry": "\(entry.id)"])
                    Telemetry.outboxStep(entry.action, .expired)
                    removed.insert(entry.id)
                    report.dropped += 1
                } catch {
                    report.storageError = error
                }
            } else if entry.failedPermanently {
                // Failed for want of a provider that is registered now: due again at once.
                if entry.lastError?.contains(OutboxEntry.noProviderReason) == true, provider(for: entry.provider) != nil
                {
                    var revived = entry
                    revived.failedPermanently = false
                    revived.nextAttemptAt = date
                    try? await outbox.updateOutboxEntry(revived)
                    due.append(revived)
                } else {
                    report.permanent += 1
                }
            } else if options.includeNotDue || entry.nextAttemptAt <= date {
                due.append(entry)
            } else {
                report.notDue += 1
            }
        }
        // Due entries are claimed a batch at a time, so that drainers sharing the storage split
        // them, each step is sent once, and a claim never outlives the work it covers. An entry
        // whose prerequisite goes through in one batch is claimed in the next.
        var attempted: Set<UUID> = []
        var outOfTime = false
        func timeIsUp() -> Bool {
            guard let limit = options.timeLimit else { return false }
            return clock.date.timeIntervalSince(date) > LeaseTerms(duration: limit).seconds
        }
        while true {
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
            // An entry this drain tried already (it failed, and is due again at once when not-due
            // entries are included) is given back: each entry is tried once per drain.
            let fresh = batch.filter { !attempted.contains($0.id) }
            for entry in batch where attempted.contains(entry.id) { try? await outbox.updateOutboxEntry(entry) }
            guard !fresh.isEmpty else { break }
            attempted.formUnion(fresh.map(\.id))
            let outcome = await send(fresh, options: options, timeIsUp: timeIsUp)
            report.peakConcurrency = max(report.peakConcurrency, outcome.peak)
            report.notDue += outcome.notStarted.count
            for entry in outcome.notStarted {
                // Past the time limit: given back at once, not after the claim runs out.
                try? await outbox.updateOutboxEntry(entry)
            }
            await record(outcome.results, options: options, into: &report, removed: &removed)
        }
        // A due entry this drain did not send waited for another, ran out of time, or was sent
        // by another drainer.
        let failedForGood = Set(report.errors.filter { !$0.value.isRetryable }.keys)
        let left = Set(entries.filter { !removed.contains($0.id) && !$0.failedPermanently }.map(\.id))
        for entry in due where !attempted.contains(entry.id) {
            if let prerequisite = entry.waitsFor, left.contains(prerequisite), !failedForGood.contains(prerequisite) {
                report.waiting += 1
            } else if outOfTime {
                report.notDue += 1
            } else {
                report.claimedElsewhere += 1
            }
        }
        let remaining = entries.filter { !removed.contains($0.id) }
        Telemetry.outbox(
            depth: remaining.count + report.damaged.count, oldest: remaining.map(\.createdAt).min(), now: now())
    }

    /// Sends the steps of `batch`, at most `maximumConcurrency` at once, starting none once the
    /// time is up.
    private func send(
        _ batch: [OutboxEntry], options: DrainOptions, timeIsUp: () -> Bool
    ) async -> (results: [(OutboxEntry, OutboxDelivery)], peak: Int, notStarted: [OutboxEntry]) {
        let providers = batch.map { provider(for: $0.provider) }
        return await withTaskGroup(of: (OutboxEntry, OutboxDelivery).self) { group in
            var next = 0
            var running = 0
            var peak = 0
            var results: [(OutboxEntry, OutboxDelivery)] = []
            func start() {
                let entry = batch[next]
                let provider = providers[next]
                group.addTask { (entry, await self.deliver(entry, to: provider)) }
                next += 1
                running += 1
                peak = max(peak, running)
            }
            while running < options.maximumConcurrency, next < batch.count, !timeIsUp() { start() }
            for await result in group {
                running -= 1
                results.append(result)
                if next < batch.count, !timeIsUp() { start() }
            }
            return (results, peak, Array(batch[next...]))
        }
    }

    /// Removes the entries that went through, keeps what a step sealed into its entry (a
    /// rotated refresh token), and sets the next attempt of those that failed.
    private func record(
        _ results: [(OutboxEntry, OutboxDelivery)], options: DrainOptions, into report: inout DrainReport,
        removed: inout Set<UUID>
    ) async {
        for (entry, delivery) in results {
            do {
                switch delivery {
                case .done:
                    try await outbox.removeOutboxEntry(entry.id)
                    logger.debug("outbox step done", metadata: ["entry": "\(entry.id)", "step": "\(entry.action)"])
                    Telemetry.outboxStep(entry.action, .revoked)
                    removed.insert(entry.id)
                    report.revoked += 1
                case .failed(let error, let changed):
                    var updated = changed ?? entry
                    updated.attempts += 1
                    updated.lastError = error.description
                    updated.failedPermanently = !error.isRetryable
                    updated.nextAttemptAt = now().addingTimeInterval(
                        options.backoff.delay(afterAttempts: updated.attempts, retryAfter: error.retryAfter))
                    try await outbox.updateOutboxEntry(updated)
                    logger.debug(
                        "outbox step failed",
                        metadata: [
                            "entry": "\(entry.id)", "step": "\(entry.action)", "attempts": "\(updated.attempts)",
                            "permanent": "\(updated.failedPermanently)", "nextAttemptAt": "\(updated.nextAttemptAt)",
                            "error": "\(error)",
                        ])
                    if updated.failedPermanently { report.permanent += 1 } else { report.failed += 1 }
                    Telemetry.outboxStep(entry.action, updated.failedPermanently ? .failedPermanently : .failed)
                    report.errors[entry.id] = error
                }
            } catch {
                report.storageError = error
            }
        }
    }

    /// Makes the entries that failed for good (``OutboxEntry/failedPermanently``) due again —
    /// every one, or those for `provider` — for when their cause is gone: a provider registered
    /// again, a network that no longer rewrites answers (a captive portal's redirect, a firewall's
    /// 403). The next ``drainOutbox(_:)`` sends them.
    /// - Returns: how many were made due.
    @discardableResult
    public func retryFailedOutboxEntries(for provider: ProviderIdentity? = nil) async throws(StorageError) -> Int {
        var count = 0
        for var entry in try await outbox.outboxEntries()
        where entry.failedPermanently && (provider == nil || entry.provider == provider) {
            entry.failedPermanently = false
            entry.nextAttemptAt = now()
            try await outbox.updateOutboxEntry(entry)
            count += 1
        }
        if count > 0 {
            logger.debug("outbox entries that had failed for good made due", metadata: ["count": "\(count)"])
        }
        return count
    }

    /// Removes an outbox entry on purpose, sent or not: an entry that failed permanently, or one
    /// whose provider is gone. A token it would have revoked stays valid at the provider until it
    /// expires.
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
}
