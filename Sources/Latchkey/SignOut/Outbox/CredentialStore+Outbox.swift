public import Foundation
import Logging
import Tracing

extension CredentialStore {
    /// The entries of the outbox, the earliest due first.
    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await outbox.outboxEntries()
    }

    /// Sends the server steps waiting in the outbox — revocations, global sign-outs, end-session
    /// requests — due entries only (unless asked), with bounded concurrency. Each batch is a
    /// claim (``OutboxStorage/withOutboxClaim(_:terms:_:)``) with the terms of a credential's
    /// lease: drainers sharing the storage send every step once, the requests are bounded by
    /// the claim's deadline, and a drainer that dies loses its claim. Only claimed entries are
    /// opened. An entry that waits for another (``OutboxEntry/waitsFor``) is sent once that one
    /// has gone through.
    ///
    /// A success removes the entry; a failure sets the next attempt with exponential backoff,
    /// jitter and the provider's `Retry-After`; a failure a retry cannot fix
    /// (``ProviderError/isRetryable`` false, or no provider registered) marks the entry
    /// ``OutboxEntry/failedPermanently``: it is no longer tried and stays until
    /// ``dropOutboxEntry(_:)`` — except that one that failed for want of a provider is due again
    /// once its provider is registered. An entry is dropped unsent only once its token has
    /// expired by the expiry the provider stated; a damaged entry is reported and left as it is.
    /// Providers must be registered with ``register(_:)``.
    ///
    /// A queued global sign-out is sent with its access token while that is valid, else with
    /// one its refresh token gets, under the claim (the rotated refresh token is sealed into the
    /// entry before it is used); a provider that turns out to have no global sign-out is left to
    /// the revocations and end-session request queued with it.
    public func drainOutbox(_ options: DrainOptions = DrainOptions()) async -> DrainReport {
        await withSpan(LatchkeyTelemetry.SpanName.drainOutbox) { span in
            var report = DrainReport()
            await capabilities.sharing { await drain(options, into: &report) }
            span.attributes["latchkey.outbox.revoked"] = report.revoked
            span.attributes["latchkey.outbox.failed"] = report.failed + report.permanent
            if !report.isClean { span.setStatus(SpanStatus(code: .error)) }
            return report
        }
    }

    private func drain(_ options: DrainOptions, into report: inout DrainReport) async {
        let started = now()
        // Entries that failed for want of a provider that is registered now are due again.
        if !providers.isEmpty {
            do {
                _ = try await outbox.reviveOutboxEntries(failedFor: .noProvider, of: Set(providers.keys), at: started)
            } catch {
                report.storageError = error
                return
            }
        }
        let terms = LeaseTerms(duration: leaseDuration, clock: clock)
        let limit = OutboxDrainLimit(started: started, timeLimit: options.timeLimit, clock: clock)
        let request = OutboxClaimRequest(
            dueBy: options.includeNotDue ? .distantFuture : started, limit: options.maximumConcurrency * 4)
        // Batch after batch until a claim brings nothing new: each entry is tried once per drain
        // (one that failed and is due again at once, with `includeNotDue`, is left as it is).
        var attempted: Set<UUID> = []
        var backlog = OutboxBacklog()
        var notStarted = 0
        while true {
            if limit.isReached { break }
            let batch: OutboxBatch
            do {
                let tried = attempted
                batch = try await outbox.withOutboxClaim(request, terms: terms) { claim in
                    await self.drain(claim, skipping: tried, options: options, terms: terms, limit: limit)
                }
            } catch {
                report.storageError = error
                break
            }
            backlog = batch.backlog
            report.add(batch)
            notStarted += batch.notStarted
            if let failure = batch.storageError {
                report.storageError = failure
                break
            }
            guard !batch.attempted.isEmpty else { break }
            attempted.formUnion(batch.attempted)
        }
        for damaged in report.damaged {
            logger.error("outbox entry damaged; left as it is", metadata: ["entry": "\(damaged.id)"])
        }
        // What is left, as the last claim found it: the entries this drain failed are among
        // those not due; those it had no time to start are due.
        report.permanent = backlog.failedPermanently
        report.waiting = backlog.waiting
        report.claimedElsewhere = backlog.claimedElsewhere
        report.notDue = max(0, backlog.notDue - report.failed) + notStarted
        Telemetry.outbox(depth: backlog.total, oldest: backlog.oldestCreatedAt, now: now())
    }

    /// One claimed batch: drops the expired, sends the rest (each at most once per drain), and
    /// writes every outcome in one write.
    private nonisolated func drain(
        _ claim: any ClaimedOutboxEntries, skipping tried: Set<UUID>, options: DrainOptions, terms: LeaseTerms,
        limit: OutboxDrainLimit
    ) async -> OutboxBatch {
        var batch = OutboxBatch(backlog: claim.backlog, damaged: claim.damaged)
        let date = now()
        var removed: [UUID] = []
        var fresh: [OutboxEntry] = []
        for entry in claim.entries {
            if let expiry = entry.tokenExpiresAt, expiry <= date {
                logger.debug("outbox entry dropped: its token has expired", metadata: ["entry": "\(entry.id)"])
                Telemetry.outboxStep(entry.action, .expired)
                removed.append(entry.id)
                batch.dropped += 1
            } else if !tried.contains(entry.id) {
                fresh.append(entry)
            }
        }
        batch.attempted = Set(fresh.map(\.id))
        // The requests go within the claim's deadline, as a lease holder's do.
        let deadline = RequestDeadline(leaseOf: terms.duration, clock: terms.clock)
        let sent = await RequestDeadline.$current.withValue(deadline) {
            await send(fresh, through: claim, options: options, limit: limit)
        }
        batch.peakConcurrency = sent.peak
        batch.notStarted = sent.notStarted
        var updated: [OutboxEntry] = []
        for (entry, delivery) in sent.results {
            switch delivery {
            case .done:
                logger.debug("outbox step done", metadata: ["entry": "\(entry.id)", "step": "\(entry.action)"])
                Telemetry.outboxStep(entry.action, .revoked)
                removed.append(entry.id)
                batch.revoked += 1
            case .failed(let error, let changed):
                let failed = Self.failed(changed ?? entry, with: error, backoff: options.backoff, at: now())
                logger.debug(
                    "outbox step failed",
                    metadata: [
                        "entry": "\(entry.id)", "step": "\(entry.action)", "attempts": "\(failed.attempts)",
                        "permanent": "\(failed.failedPermanently)", "nextAttemptAt": "\(failed.nextAttemptAt)",
                        "error": "\(error)",
                    ])
                if !failed.failedPermanently { batch.failed += 1 }
                Telemetry.outboxStep(entry.action, failed.failedPermanently ? .failedPermanently : .failed)
                batch.errors[entry.id] = error
                updated.append(failed)
            }
        }
        if !removed.isEmpty || !updated.isEmpty {
            do {
                try await claim.settle(removing: removed, updating: updated)
            } catch {
                batch.storageError = error
            }
        }
        return batch
    }

    /// `entry` after an attempt that failed with `error`: one more attempt, why, and when next.
    private static func failed(_ entry: OutboxEntry, with error: ProviderError, backoff: OutboxBackoff, at date: Date)
        -> OutboxEntry
    {
        var failed = entry
        failed.attempts += 1
        failed.lastError = error.description
        failed.failureCause = OutboxEntry.FailureCause(error)
        failed.failedPermanently = !error.isRetryable
        failed.nextAttemptAt = date.addingTimeInterval(
            backoff.delay(afterAttempts: failed.attempts, retryAfter: error.retryAfter))
        return failed
    }

    /// Sends the steps of `entries`, at most `maximumConcurrency` at once, starting none once the
    /// time is up.
    private nonisolated func send(
        _ entries: [OutboxEntry], through claim: any ClaimedOutboxEntries, options: DrainOptions,
        limit: OutboxDrainLimit
    ) async -> (results: [(OutboxEntry, OutboxDelivery)], peak: Int, notStarted: Int) {
        var providers: [ProviderIdentity: any IdentityProvider] = [:]
        for identity in Set(entries.map(\.provider)) { providers[identity] = await provider(for: identity) }
        return await withTaskGroup(of: (OutboxEntry, OutboxDelivery).self) { group in
            var next = 0
            var running = 0
            var peak = 0
            var results: [(OutboxEntry, OutboxDelivery)] = []
            func start() {
                let entry = entries[next]
                let provider = providers[entry.provider]
                group.addTask { (entry, await self.deliver(entry, to: provider, through: claim)) }
                next += 1
                running += 1
                peak = max(peak, running)
            }
            while running < options.maximumConcurrency, next < entries.count, !limit.isReached { start() }
            for await result in group {
                running -= 1
                results.append(result)
                if next < entries.count, !limit.isReached { start() }
            }
            return (results, peak, entries.count - next)
        }
    }

    /// Makes the entries that failed for good (``OutboxEntry/failedPermanently``) due again —
    /// every one, or those for `provider` — for when their cause is gone: a provider registered
    /// again, a network that no longer rewrites answers (a captive portal's redirect, a firewall's
    /// 403). The next ``drainOutbox(_:)`` sends them.
    /// - Returns: how many were made due.
    @discardableResult
    public func retryFailedOutboxEntries(for provider: ProviderIdentity? = nil) async throws(StorageError) -> Int {
        let count = try await outbox.reviveOutboxEntries(failedFor: nil, of: provider.map { [$0] }, at: now())
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
        guard try await outbox.removeOutboxEntry(id) else { return false }
        logger.debug("outbox entry dropped on purpose", metadata: ["entry": "\(id)"])
        return true
    }
}

/// When a drain must start nothing more: `timeLimit` after it started, by the store's clock.
struct OutboxDrainLimit: Sendable {
    var started: Date
    var timeLimit: Duration?
    var clock: any LatchkeyClock

    var isReached: Bool {
        guard let timeLimit else { return false }
        return clock.date.timeIntervalSince(started) > LeaseTerms(duration: timeLimit).seconds
    }
}

/// What one claimed batch of a drain came to.
struct OutboxBatch: Sendable {
    var backlog: OutboxBacklog
    var damaged: [DamagedRecord]
    var attempted: Set<UUID> = []
    var revoked = 0
    var failed = 0
    var dropped = 0
    var notStarted = 0
    var peakConcurrency = 0
    var errors: [UUID: ProviderError] = [:]
    var storageError: StorageError?
}

extension DrainReport {
    /// Adds what one batch did.
    mutating func add(_ batch: OutboxBatch) {
        revoked += batch.revoked
        failed += batch.failed
        dropped += batch.dropped
        peakConcurrency = max(peakConcurrency, batch.peakConcurrency)
        errors.merge(batch.errors) { _, new in new }
        for record in batch.damaged where !damaged.contains(record) { damaged.append(record) }
    }
}
