public import Foundation
import GRDB
public import Latchkey

extension SQLiteCredentialStorage {
    private static let selectEntries = "SELECT \(SQL.list(SealedOutboxEntry.columns)) FROM outbox"
    private static let earliestFirst = "ORDER BY next_attempt_at, created_at"

    public func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        try await write { db, sealer in
            let row = try SealedOutboxEntry(entry, sealer: sealer)
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM outbox WHERE id = ?", arguments: [row.id]).isTrue
            if !exists, try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0 >= limit {
                throw StorageError.outboxFull(limit: limit)
            }
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO outbox (\(SQL.list(SealedOutboxEntry.columns)))
                    VALUES (\(SQL.placeholders(SealedOutboxEntry.columns)))
                    """, arguments: row.arguments)
        }
    }

    /// The storage itself is its lease holders' access, and reaches the outbox.
    public func enqueueThroughLease(_ entry: OutboxEntry, limit: Int) async throws(StorageError) -> Bool {
        try await enqueue(entry, limit: limit)
        return true
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await read { db, sealer in
            try Self.readOutbox(db, "\(Self.selectEntries) \(Self.earliestFirst)", sealer: sealer).values
        }
    }

    /// Claims in one `IMMEDIATE` transaction, so processes sharing the file never claim the same
    /// entry; a claim is the entry's `claimed_until`.
    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        let (due, moment) = (date.timeIntervalSinceReferenceDate, now.timeIntervalSinceReferenceDate)
        let until = SealedRecords.claimedUntil(now: now, for: duration)
        return try await write { db, sealer in
            let entries = try Self.readOutbox(
                db,
                """
                \(Self.selectEntries) AS entry
                WHERE failed_permanently = 0 AND next_attempt_at <= ?
                    AND (claimed_until IS NULL OR claimed_until <= ?)
                    AND (waits_for IS NULL OR NOT EXISTS (
                        SELECT 1 FROM outbox AS first WHERE first.id = entry.waits_for AND first.failed_permanently = 0))
                \(Self.earliestFirst) LIMIT ?
                """, arguments: [due, moment, max(0, limit)], sealer: sealer
            ).values
            for entry in entries {
                try db.execute(
                    sql: "UPDATE outbox SET claimed_until = ? WHERE id = ?", arguments: [until, entry.id.uuidString])
            }
            return entries
        }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        try await write { db, sealer in
            let row = try SealedOutboxEntry(entry, sealer: sealer)
            var arguments = row.arguments
            arguments += [row.id]
            // Absent entries are ignored: a concurrent drain may have removed it.
            try db.execute(
                sql: """
                    UPDATE outbox SET \(SQL.assignments(SealedOutboxEntry.columns)), claimed_until = NULL
                    WHERE id = ?
                    """, arguments: arguments)
        }
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        try await write { db, _ in try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id.uuidString]) }
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await read { db, sealer in try Self.readOutbox(db, Self.selectEntries, sealer: sealer).damaged }
    }
}
