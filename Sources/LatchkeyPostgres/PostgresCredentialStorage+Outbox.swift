public import Foundation
public import Latchkey
import Logging
import PostgresNIO

extension PostgresCredentialStorage {
    static let outboxColumns = """
        id, issuer, client_id, kind, account, sealed_token, token_expires_at, created_at, attempts, next_attempt_at, \
        last_error, failed_permanently, waits_for
        """

    private static let earliestFirst = "ORDER BY next_attempt_at, created_at"

    /// The limit is checked under a transaction-scoped advisory lock, so that instances
    /// enqueueing at once cannot both take the last place.
    public func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        try await transaction("queueing a server step") { connection in
            try await self.enqueue(entry, limit: limit, on: connection)
        }
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox \(unescaped: Self.earliestFirst)"
        ).values
    }

    /// `FOR UPDATE SKIP LOCKED`: instances claiming at the same moment each get other entries.
    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        let due = date.timeIntervalSinceReferenceDate
        let moment = now.timeIntervalSinceReferenceDate
        let until = SealedRecords.claimedUntil(now: now, for: duration)
        let claimed = try await readOutbox(
            """
            UPDATE latchkey_outbox SET claimed_until = \(until)
            WHERE id IN (
                SELECT id FROM latchkey_outbox AS entry
                WHERE failed_permanently = false AND next_attempt_at <= \(due)
                    AND (claimed_until IS NULL OR claimed_until <= \(moment))
                    AND (waits_for IS NULL OR NOT EXISTS (
                        SELECT 1 FROM latchkey_outbox AS first
                        WHERE first.id = entry.waits_for AND first.failed_permanently = false))
                \(unescaped: Self.earliestFirst)
                LIMIT \(max(0, limit))
                FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.outboxColumns)
            """)
        return claimed.values.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        let row = try SealedOutboxEntry(entry, sealer: sealer)
        try await execute(
            """
            UPDATE latchkey_outbox SET issuer = \(row.issuer), client_id = \(row.clientID), kind = \(row.kind),
                account = \(row.account), sealed_token = \(row.sealedToken), token_expires_at = \(row.tokenExpiresAt),
                created_at = \(row.createdAt), attempts = \(row.attempts), next_attempt_at = \(row.nextAttemptAt),
                last_error = \(row.lastError), failed_permanently = \(row.failedPermanently),
                waits_for = \(row.waitsFor), claimed_until = NULL
            WHERE id = \(row.id)
            """, doing: "updating a queued server step")
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        try await execute(
            "DELETE FROM latchkey_outbox WHERE id = \(id.uuidString)", doing: "removing a queued server step")
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox \(unescaped: Self.earliestFirst)"
        ).damaged
    }

    /// Adds an entry, in the transaction of `connection`, under the outbox's bound.
    func enqueue(_ entry: OutboxEntry, limit: Int, on connection: PostgresConnection) async throws {
        let row = try SealedOutboxEntry(entry, sealer: sealer)
        // The bound is kept under a lock of its own, so that instances queueing at once do not
        // both take the last place; without a bound there is nothing to keep.
        if limit < Int.max { try await Self.advisoryLock(Self.outboxLimitLock, on: connection, logger: logger) }
        let exists = try await Self.count(
            connection.query("SELECT 1 FROM latchkey_outbox WHERE id = \(row.id)", logger: logger))
        if exists == 0, limit < Int.max {
            var count = 0
            for try await total in try await connection.query("SELECT count(*) FROM latchkey_outbox", logger: logger)
                .decode(Int.self)
            {
                count = total
            }
            guard count < limit else { throw StorageError.outboxFull(limit: limit) }
        }
        for try await _ in try await connection.query(
            """
            INSERT INTO latchkey_outbox (\(unescaped: Self.outboxColumns))
            VALUES (\(row.id), \(row.issuer), \(row.clientID), \(row.kind), \(row.account), \(row.sealedToken),
                \(row.tokenExpiresAt), \(row.createdAt), \(row.attempts), \(row.nextAttemptAt), \(row.lastError),
                \(row.failedPermanently), \(row.waitsFor))
            ON CONFLICT (id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
                kind = EXCLUDED.kind, account = EXCLUDED.account, sealed_token = EXCLUDED.sealed_token,
                token_expires_at = EXCLUDED.token_expires_at, created_at = EXCLUDED.created_at,
                attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
                last_error = EXCLUDED.last_error, failed_permanently = EXCLUDED.failed_permanently,
                waits_for = EXCLUDED.waits_for, claimed_until = NULL
            """, logger: logger)
        {}
    }

    static let outboxLimitLock: Int64 = 0x4C_4B_4F_75_74_62_6F_78  // "LKOutbox"
}
