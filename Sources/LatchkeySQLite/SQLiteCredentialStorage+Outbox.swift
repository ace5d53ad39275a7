public import Foundation
import GRDB
public import Latchkey

/// The outbox in the same file as the credentials. A claim is a lease of its own: a row of
/// `refresh_lease` (`outbox:HOLDER`) that names the drainer's process, alive and renewed as a
/// credential's lease holder is, and `claimed_by` on the entries it holds; a claim whose row is
/// dead (its process is gone, or its row ran out) holds nothing.
extension SQLiteCredentialStorage {
    private static let selectEntries = "SELECT \(SQL.list(SealedOutboxEntry.columns)) FROM outbox"
    private static let earliestFirst = "ORDER BY next_attempt_at, created_at"

    public func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) {
        try await enqueue(entries, limit: limit, fence: nil)
    }

    /// Adds outbox entries in one write; with `fence`, only while its lease is held.
    func enqueue(_ entries: [OutboxEntry], limit: Int, fence: LeaseFence?) async throws(StorageError) {
        guard !entries.isEmpty else { return }
        try await write { db, sealer in
            try fence?.check(db)
            let rows = try entries.map { entry throws(StorageError) in try SealedOutboxEntry(entry, sealer: sealer) }
            var growth = 0
            for row in Set(rows.map(\.id))
            where try !Bool.fetchOne(db, sql: "SELECT 1 FROM outbox WHERE id = ?", arguments: [row]).isTrue {
                growth += 1
            }
            if growth > 0, (try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0) + growth > limit {
                throw StorageError.outboxFull(limit: limit)
            }
            for row in rows {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO outbox (\(SQL.list(SealedOutboxEntry.columns)))
                        VALUES (\(SQL.placeholders(SealedOutboxEntry.columns)))
                        """, arguments: row.arguments)
            }
        }
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await read { db, sealer in
            try Self.readOutbox(db, "\(Self.selectEntries) \(Self.earliestFirst)", sealer: sealer).values
        }
    }

    /// Claims in one `IMMEDIATE` transaction (no two processes claim at once), from what every
    /// row says in the clear (``OutboxClaimSelection``), and opens the claimed rows alone.
    public func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result {
        let holder = UUID().uuidString
        let lease = "outbox:" + holder
        LiveHolders.shared.insert(holder)
        defer { LiveHolders.shared.remove(holder) }
        let claimed = try await write { db, sealer in try Self.claim(request, holder: holder, terms: terms, db, sealer)
        }
        let claimedIDs = Set(claimed.entries.values.map(\.id))
        let access = OutboxClaimAccess(
            entries: claimed.entries.values, damaged: claimed.entries.damaged, backlog: claimed.backlog
        ) { removed, updated async throws(StorageError) in
            try await self.settle(removing: removed, updating: updated, holder: holder, claimed: claimedIDs)
        }
        let result = await whileHolding(lease, holder: holder, terms: terms) { await body(access) }
        access.scope.end()
        await release(lease, holder: holder) { db in
            try db.execute(sql: "UPDATE outbox SET claimed_by = NULL WHERE claimed_by = ?", arguments: [holder])
        }
        return result
    }

    private static func claim(
        _ request: OutboxClaimRequest, holder: String, terms: LeaseTerms, _ db: Database, _ sealer: Sealer
    ) throws -> (entries: (values: [OutboxEntry], damaged: [DamagedRecord]), backlog: OutboxBacklog) {
        let now = terms.clock.date
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT id, next_attempt_at, created_at, failed_permanently, waits_for, token_expires_at, claimed_by
                FROM outbox
                """)
        // The drainers that hold entries and are alive; and a key rotation, which holds everything.
        func alive(_ leases: [String]) throws -> [LeaseHost.Holder] {
            try leaseHolders(db, of: leases).filter {
                $0.isAlive(now: now.timeIntervalSinceReferenceDate, seenFrom: LeaseHost.current)
            }
        }
        let claimants = Set(rows.compactMap { $0["claimed_by"] as String? })
        let live = Set(try alive(claimants.map { "outbox:" + $0 }).map(\.id))
        let rotating = try !alive([storeLease]).isEmpty
        let selection = OutboxClaimSelection(
            rows.compactMap { row in
                guard let id = UUID(uuidString: row["id"]) else { return nil }
                return OutboxClaimSelection.Row(
                    id: id, nextAttemptAt: Date(timeIntervalSinceReferenceDate: row["next_attempt_at"]),
                    createdAt: Date(timeIntervalSinceReferenceDate: row["created_at"]),
                    failedPermanently: row["failed_permanently"],
                    waitsFor: (row["waits_for"] as String?).flatMap(UUID.init(uuidString:)),
                    tokenExpiresAt: (row["token_expires_at"] as Double?).map(
                        Date.init(timeIntervalSinceReferenceDate:)),
                    claimedElsewhere: (row["claimed_by"] as String?).map(live.contains) ?? false)
            }, request: rotating ? OutboxClaimRequest(dueBy: .distantPast, limit: 0) : request, now: now)
        guard !selection.claimed.isEmpty else { return (([], []), selection.backlog) }
        try insertLease("outbox:" + holder, holder: holder, terms: terms, in: db)
        let ids = selection.claimed.map(\.uuidString)
        try db.execute(
            sql: "UPDATE outbox SET claimed_by = ? WHERE id IN (\(SQL.placeholders(ids)))",
            arguments: StatementArguments([holder] + ids))
        var read = try readOutbox(
            db, "\(selectEntries) WHERE id IN (\(SQL.placeholders(ids))) \(earliestFirst)",
            arguments: StatementArguments(ids), sealer: sealer)
        read.values.sort { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
        return (read, selection.backlog)
    }

    /// Writes a claim's outcomes in one transaction, its own entries only: an entry it
    /// `claimed` that another drainer took over since (after this one stalled past its term) is
    /// not written, and the settle then throws ``StorageError/Code/leaseNotHeld`` naming how many
    /// (an entry removed meanwhile, `outbox drop`, is simply gone).
    func settle(removing removed: [UUID], updating updated: [OutboxEntry], holder: String, claimed: Set<UUID>)
        async throws(StorageError)
    {
        let ids = Set(removed + updated.map(\.id)).intersection(claimed).map(\.uuidString)
        guard !ids.isEmpty else { return }
        let lost = try await write { db, sealer in
            let taken = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM outbox WHERE id IN (\(SQL.placeholders(ids)))
                    AND claimed_by IS NOT ?
                    """, arguments: StatementArguments(ids + [holder]))
            for id in removed {
                try db.execute(
                    sql: "DELETE FROM outbox WHERE id = ? AND claimed_by = ?", arguments: [id.uuidString, holder])
            }
            for entry in updated {
                try SealedOutboxEntry(entry, sealer: sealer).replace(in: db, and: "AND claimed_by = ?", [holder])
            }
            return taken.count
        }
        if lost > 0 { throw StorageError.lostOutboxClaim(entries: lost) }
    }

    public func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    ) async throws(StorageError) -> Int {
        try await write { db, _ in
            var sql = "UPDATE outbox SET failed_permanently = 0, next_attempt_at = ? WHERE failed_permanently = 1"
            var arguments: StatementArguments = [date.timeIntervalSinceReferenceDate]
            if let cause {
                sql += " AND failure_cause = ?"
                arguments += [cause.rawValue]
            }
            if let providers {
                guard !providers.isEmpty else { return 0 }
                sql +=
                    " AND (" + providers.map { _ in "(issuer = ? AND client_id = ?)" }.joined(separator: " OR ") + ")"
                for provider in providers { arguments += [provider.issuer, provider.clientID] }
            }
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount
        }
    }

    @discardableResult
    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id.uuidString])
            return db.changesCount > 0
        }
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await read { db, sealer in try Self.readOutbox(db, Self.selectEntries, sealer: sealer).damaged }
    }
}
