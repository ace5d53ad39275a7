public import Foundation
public import Latchkey
import Logging
import PostgresNIO

/// The outbox, drained by every instance together. A claim is `claimed_by` (the drainer) and
/// `claimed_until` (renewed every quarter of the lease's duration while the drainer works) on
/// the entries it holds, taken with `FOR UPDATE SKIP LOCKED` so that instances claiming at once
/// each get other entries; a drainer that dies loses its claim once `claimed_until` passes.
extension PostgresCredentialStorage {
    static let outboxColumns = """
        id, issuer, client_id, kind, account, sealed_token, token_expires_at, created_at, attempts, next_attempt_at, \
        last_error, failure_cause, failed_permanently, waits_for
        """

    private static let earliestFirst = "ORDER BY next_attempt_at, created_at"

    /// The bound is checked under a row lock, so that instances enqueueing at once cannot both
    /// take the last place.
    public func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) {
        guard !entries.isEmpty else { return }
        try await transaction("queueing server steps") { connection in
            try await self.enqueue(entries, limit: limit, on: connection)
        }
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox \(unescaped: Self.earliestFirst)"
        ).values
    }

    public func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result {
        let holder = UUID().uuidString
        let now = terms.clock.date.timeIntervalSinceReferenceDate
        let term = terms.seconds
        let due = request.dueBy.timeIntervalSinceReferenceDate
        let limit = request.limit
        let claimed = try await transaction("claiming queued server steps") { connection in
            let entries = try await self.readOutbox(
                """
                UPDATE latchkey_outbox
                SET claimed_by = \(holder), claimed_until = \(unescaped: Self.databaseNow) + \(term)
                WHERE id IN (
                    SELECT id FROM latchkey_outbox AS entry
                    WHERE (claimed_until IS NULL OR claimed_until <= \(unescaped: Self.databaseNow))
                        AND ((token_expires_at IS NOT NULL AND token_expires_at <= \(now))
                            OR (failed_permanently = false AND next_attempt_at <= \(due)
                                AND (waits_for IS NULL OR NOT EXISTS (
                                    SELECT 1 FROM latchkey_outbox AS first
                                    WHERE first.id = entry.waits_for AND first.failed_permanently = false))))
                    \(unescaped: Self.earliestFirst)
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.outboxColumns)
                """, on: connection)
            return (entries, try await self.backlog(holder: holder, now: now, on: connection))
        }
        let claimedIDs = Set(claimed.0.values.map(\.id))
        let access = OutboxClaimAccess(
            entries: claimed.0.values.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) },
            damaged: claimed.0.damaged, backlog: claimed.1
        ) { removed, updated async throws(StorageError) in
            try await self.settle(removing: removed, updating: updated, holder: holder, claimed: claimedIDs)
        }
        let result = await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.renewClaim(holder, terms: terms) }
            let result = await body(access)
            group.cancelAll()
            return result
        }
        access.scope.end()
        do {
            try await execute(
                "UPDATE latchkey_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = \(holder)",
                doing: "ending a claim of the outbox")
        } catch {
            // The claim runs out by itself: its entries are free once claimed_until passes.
            logger.warning("outbox claim not released", metadata: ["error": "\(error)"])
        }
        return result
    }

    /// What the outbox holds at `now`, by state, opening nothing (``OutboxBacklog``).
    private func backlog(holder: String, now: Double, on connection: PostgresConnection) async throws -> OutboxBacklog {
        let elsewhere =
            "COALESCE(claimed_until > \(Self.databaseNow) AND claimed_by IS DISTINCT FROM '\(holder)', false)"
        let waiting = """
            (waits_for IS NOT NULL AND EXISTS (
                SELECT 1 FROM latchkey_outbox AS first WHERE first.id = entry.waits_for AND first.failed_permanently = false))
            """
        var backlog = OutboxBacklog()
        for try await (total, claimedElsewhere, failed, waits, notDue, oldest) in try await connection.query(
            """
            SELECT count(*), count(*) FILTER (WHERE \(unescaped: elsewhere)),
                count(*) FILTER (WHERE NOT \(unescaped: elsewhere) AND failed_permanently),
                count(*) FILTER (WHERE NOT \(unescaped: elsewhere) AND NOT failed_permanently AND \(unescaped: waiting)),
                count(*) FILTER (
                    WHERE NOT \(unescaped: elsewhere) AND NOT failed_permanently AND NOT \(unescaped: waiting)
                        AND next_attempt_at > \(now)),
                min(created_at)
            FROM latchkey_outbox AS entry
            """, logger: logger
        ).decode((Int, Int, Int, Int, Int, Double?).self) {
            backlog = OutboxBacklog(
                total: total, notDue: notDue, waiting: waits, failedPermanently: failed,
                claimedElsewhere: claimedElsewhere,
                oldestCreatedAt: oldest.map(Date.init(timeIntervalSinceReferenceDate:)))
        }
        return backlog
    }

    /// Keeps the claim of `holder` ahead while its body runs. Returns when cancelled.
    private func renewClaim(_ holder: String, terms: LeaseTerms) async {
        let every = terms.duration / 4
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: every)
                try await execute(
                    """
                    UPDATE latchkey_outbox SET claimed_until = \(unescaped: Self.databaseNow) + \(terms.seconds)
                    WHERE claimed_by = \(holder)
                    """,
                    doing: "renewing a claim of the outbox")
            } catch {
                if Task.isCancelled { return }
                logger.debug("outbox claim not renewed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes a claim's outcomes in one transaction, its own entries only (the claim is kept):
    /// an entry it `claimed` that another drainer took over since (its claim ran out) is not
    /// written, and the settle then throws ``StorageError/Code/leaseNotHeld`` naming how many
    /// (an entry removed meanwhile, `outbox drop`, is simply gone).
    func settle(removing removed: [UUID], updating updated: [OutboxEntry], holder: String, claimed: Set<UUID>)
        async throws(StorageError)
    {
        let rows = try updated.map { entry throws(StorageError) in try SealedOutboxEntry(entry, sealer: sealer) }
        let ids = removed.map(\.uuidString)
        let mine = Set(removed + updated.map(\.id)).intersection(claimed).map(\.uuidString)
        let lost = try await transaction("recording sent server steps") { connection in
            let taken = try await Self.count(
                connection.query(
                    """
                    SELECT 1 FROM latchkey_outbox
                    WHERE id = ANY(\(mine)) AND claimed_by IS DISTINCT FROM \(holder) FOR UPDATE
                    """, logger: self.logger))
            if !ids.isEmpty {
                for try await _ in try await connection.query(
                    "DELETE FROM latchkey_outbox WHERE id = ANY(\(ids)) AND claimed_by = \(holder)", logger: self.logger
                ) {}
            }
            for row in rows {
                for try await _ in try await connection.query(
                    """
                    UPDATE latchkey_outbox SET issuer = \(row.issuer), client_id = \(row.clientID), kind = \(row.kind),
                        account = \(row.account), sealed_token = \(row.sealedToken),
                        token_expires_at = \(row.tokenExpiresAt), created_at = \(row.createdAt),
                        attempts = \(row.attempts), next_attempt_at = \(row.nextAttemptAt),
                        last_error = \(row.lastError), failure_cause = \(row.failureCause),
                        failed_permanently = \(row.failedPermanently), waits_for = \(row.waitsFor)
                    WHERE id = \(row.id) AND claimed_by = \(holder)
                    """, logger: self.logger)
                {}
            }
            return taken
        }
        if lost > 0 { throw StorageError.lostOutboxClaim(entries: lost) }
    }

    /// Hands every lease and outbox claim to another holder, as another instance does once
    /// their terms ran out: for the storage contract's takeover checks
    /// (`LatchkeyStorageTesting.LeaseTakeover`).
    package func handLeasesToAnotherHolder() async throws(StorageError) {
        try await transaction("handing leases to another holder") { connection in
            for try await _ in try await connection.query(
                "UPDATE latchkey_lease SET holder = 'another:' || holder", logger: self.logger)
            {}
            for try await _ in try await connection.query(
                "UPDATE latchkey_outbox SET claimed_by = 'another:' || claimed_by WHERE claimed_by IS NOT NULL",
                logger: self.logger)
            {}
        }
    }

    public func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    ) async throws(StorageError) -> Int {
        if let providers, providers.isEmpty { return 0 }
        let issuers = providers?.map(\.issuer) ?? []
        let clients = providers?.map(\.clientID) ?? []
        let rows = try await rows(
            """
            UPDATE latchkey_outbox SET failed_permanently = false, next_attempt_at = \(date.timeIntervalSinceReferenceDate)
            WHERE failed_permanently AND (\(cause?.rawValue)::text IS NULL OR failure_cause = \(cause?.rawValue))
                AND (\(providers == nil) OR (issuer, client_id) IN (SELECT * FROM unnest(\(issuers)::text[], \(clients)::text[])))
            RETURNING 1
            """)
        return rows.count
    }

    @discardableResult
    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool {
        try await !rows("DELETE FROM latchkey_outbox WHERE id = \(id.uuidString) RETURNING 1").isEmpty
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox \(unescaped: Self.earliestFirst)"
        ).damaged
    }

    /// Adds entries, in the transaction of `connection`, under the outbox's bound.
    func enqueue(_ entries: [OutboxEntry], limit: Int, on connection: PostgresConnection) async throws {
        let rows = try entries.map { entry throws(StorageError) in try SealedOutboxEntry(entry, sealer: sealer) }
        // The bound is kept under a row lock of its own, so that instances queueing at once do
        // not both take the last place; without a bound there is nothing to keep.
        if limit < Int.max {
            try await Self.lockRow(Self.outboxLimitLock, on: connection, logger: logger)
            let ids = Array(Set(rows.map(\.id)))
            var existing = 0
            var count = 0
            for try await (found, total) in try await connection.query(
                """
                SELECT count(*) FILTER (WHERE id = ANY(\(ids))), count(*) FROM latchkey_outbox
                """, logger: logger
            ).decode((Int, Int).self) {
                (existing, count) = (found, total)
            }
            guard count + ids.count - existing <= limit else { throw StorageError.outboxFull(limit: limit) }
        }
        for row in rows {
            for try await _ in try await connection.query(
                """
                INSERT INTO latchkey_outbox (\(unescaped: Self.outboxColumns))
                VALUES (\(row.id), \(row.issuer), \(row.clientID), \(row.kind), \(row.account), \(row.sealedToken),
                    \(row.tokenExpiresAt), \(row.createdAt), \(row.attempts), \(row.nextAttemptAt), \(row.lastError),
                    \(row.failureCause), \(row.failedPermanently), \(row.waitsFor))
                ON CONFLICT (id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
                    kind = EXCLUDED.kind, account = EXCLUDED.account, sealed_token = EXCLUDED.sealed_token,
                    token_expires_at = EXCLUDED.token_expires_at, created_at = EXCLUDED.created_at,
                    attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
                    last_error = EXCLUDED.last_error, failure_cause = EXCLUDED.failure_cause,
                    failed_permanently = EXCLUDED.failed_permanently, waits_for = EXCLUDED.waits_for,
                    claimed_by = NULL, claimed_until = NULL
                """, logger: logger)
            {}
        }
    }

    /// The `latchkey_setting` row whose lock queueing takes.
    static let outboxLimitLock = "outbox_limit_lock"
}
