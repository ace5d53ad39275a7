import Foundation
import Latchkey
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// How the storage reads and writes: rows decoded one by one (a damaged row is reported and
/// the others are read), transactions, notifications, and PostgreSQL's failures as
/// ``StorageError``s.
extension PostgresCredentialStorage {
    /// Every row of `query`.
    func rows(_ query: @autoclosure () throws -> PostgresQuery) async throws(StorageError) -> [PostgresRow] {
        do {
            var rows: [PostgresRow] = []
            for try await row in try await client.query(try query(), logger: logger) { rows.append(row) }
            return rows
        } catch {
            throw Self.storageError(error, doing: "reading the store")
        }
    }

    /// Runs a statement whose rows do not matter.
    func execute(_ query: @autoclosure () throws -> PostgresQuery, doing what: String) async throws(StorageError) {
        do {
            for try await _ in try await client.query(try query(), logger: logger) {}
        } catch {
            throw Self.storageError(error, doing: what)
        }
    }

    /// Runs `body` in one transaction; a ``StorageError`` it throws rolls it back and is
    /// thrown as it is.
    func transaction<Result: Sendable>(
        _ what: String, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws(StorageError) -> Result {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch {
            throw Self.storageError(error, doing: what)
        }
    }

    /// Runs a write of credentials in one transaction, with the read cache emptied before it
    /// starts and after it ends (a read under way meanwhile keeps nothing).
    func credentialTransaction<Result: Sendable>(
        _ what: String, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws(StorageError) -> Result {
        readCache.withLockedValue { $0.wrote() }
        defer { readCache.withLockedValue { $0.wrote() } }
        return try await transaction(what, body)
    }

    /// The number of rows a statement answered (`RETURNING 1` for a write).
    static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// The credentials `query` selects, each row opened on its own: a damaged one is reported
    /// and the others are read.
    func readCredentials(_ query: @autoclosure () throws -> PostgresQuery) async throws(StorageError) -> (
        values: [StoredCredential], damaged: [DamagedRecord]
    ) {
        let sealer = self.sealer
        return SealedRecords.open(try await rows(try query()), kind: .credential, id: Self.rowID) {
            try Self.sealedCredential($0).open(with: sealer)
        }
    }

    /// The credentials `query` selects on `connection`, each row opened on its own.
    func readCredentials(_ query: PostgresQuery, on connection: PostgresConnection) async throws(StorageError) -> (
        values: [StoredCredential], damaged: [DamagedRecord]
    ) {
        let sealer = self.sealer
        let rows: [PostgresRow]
        do {
            var read: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { read.append(row) }
            rows = read
        } catch {
            throw Self.storageError(error, doing: "reading the store")
        }
        return SealedRecords.open(rows, kind: .credential, id: Self.rowID) {
            try Self.sealedCredential($0).open(with: sealer)
        }
    }

    static func sealedCredential(_ row: PostgresRow) throws -> SealedCredential {
        let columns = row.makeRandomAccess()
        return SealedCredential(
            id: try columns["id"].decode(String.self), subject: try columns["subject"].decode(String?.self),
            username: try columns["username"].decode(String?.self), email: try columns["email"].decode(String?.self),
            issuer: try columns["issuer"].decode(String.self), name: try columns["name"].decode(String?.self),
            clientID: try columns["client_id"].decode(String.self), tags: try columns["tags"].decode(String.self),
            metadata: try columns["metadata"].decode(String.self),
            sealedToken: try columns["sealed_token"].decode(Data.self),
            createdAt: try columns["created_at"].decode(Double.self),
            updatedAt: try columns["updated_at"].decode(Double.self), version: try columns["version"].decode(Int.self),
            accessTokenExpiresAt: try columns["access_token_expires_at"].decode(Double?.self),
            hasAccessToken: try columns["has_access_token"].decode(Bool.self),
            hasRefreshToken: try columns["has_refresh_token"].decode(Bool.self),
            needsSignIn: try columns["needs_sign_in"].decode(Bool.self),
            rejectedAccessToken: try columns["rejected_access_token"].decode(String?.self))
    }

    /// The outbox entries `query` answers, each row opened on its own.
    func readOutbox(_ query: @autoclosure () throws -> PostgresQuery) async throws(StorageError) -> (
        values: [OutboxEntry], damaged: [DamagedRecord]
    ) {
        try await readOutbox(try await rows(try query()))
    }

    /// `rows` of the outbox, each opened on its own.
    private func readOutbox(_ rows: [PostgresRow]) async throws(StorageError) -> (
        values: [OutboxEntry], damaged: [DamagedRecord]
    ) {
        let sealer = self.sealer
        return SealedRecords.open(rows, kind: .outboxEntry, id: Self.rowID) { row in
            let columns = row.makeRandomAccess()
            return SealedOutboxEntry(
                id: try columns["id"].decode(String.self), issuer: try columns["issuer"].decode(String.self),
                clientID: try columns["client_id"].decode(String.self), kind: try columns["kind"].decode(String.self),
                account: try columns["account"].decode(String?.self),
                sealedToken: try columns["sealed_token"].decode(Data.self),
                tokenExpiresAt: try columns["token_expires_at"].decode(Double?.self),
                createdAt: try columns["created_at"].decode(Double.self),
                attempts: try columns["attempts"].decode(Int.self),
                nextAttemptAt: try columns["next_attempt_at"].decode(Double.self),
                lastError: try columns["last_error"].decode(String?.self),
                failureCause: try columns["failure_cause"].decode(String?.self),
                failedPermanently: try columns["failed_permanently"].decode(Bool.self),
                waitsFor: try columns["waits_for"].decode(String?.self)
            ).open(with: sealer)
        }
    }

    /// The outbox entries `query` answers on `connection` (in its transaction), each row opened
    /// on its own.
    func readOutbox(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> (
        values: [OutboxEntry], damaged: [DamagedRecord]
    ) {
        var rows: [PostgresRow] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
        return try await readOutbox(rows)
    }

    /// A row's `id`, for reporting one that does not decode.
    private static func rowID(_ row: PostgresRow) -> String? {
        try? row.makeRandomAccess()["id"].decode(String.self)
    }

    // MARK: The default marker

    func defaultMarker() async throws(StorageError) -> DefaultMarker {
        marker(try await rows("SELECT value FROM latchkey_setting WHERE name = \(DefaultMarker.settingName)").first)
    }

    /// The marker, its row locked until the transaction ends (a concurrent change waits).
    func lockedDefaultMarker(_ connection: PostgresConnection) async throws -> DefaultMarker {
        var found: PostgresRow?
        for try await row in try await connection.query(
            "SELECT value FROM latchkey_setting WHERE name = \(DefaultMarker.settingName) FOR UPDATE", logger: logger)
        {
            found = row
        }
        return marker(found)
    }

    private func marker(_ row: PostgresRow?) -> DefaultMarker {
        guard let row else { return .none }
        guard let sealed = try? row.decode(Data.self) else { return .damaged }
        return DefaultMarker(sealed: sealed, sealer: sealer)
    }

    // MARK: Failures

    /// Locks the `latchkey_setting` row `name` until the transaction of `connection` ends.
    ///
    /// A row lock, not an advisory lock: servers that only speak PostgreSQL's protocol may make
    /// advisory locks no-ops (CockroachDB's always succeed). postgres-nio hands back a query's
    /// rows as soon as their description arrives, before a `SELECT` that waits for a lock has
    /// run: the answer is read to its end here, or the caller would go on without the lock.
    /// (Every `SELECT` in a transaction is read to its end for the same reason: its error must
    /// surface, not turn the `COMMIT` into a silent rollback.)
    static func lockRow(_ name: String, on connection: PostgresConnection, logger: Logger) async throws {
        let locked = try await count(
            connection.query("SELECT 1 FROM latchkey_setting WHERE name = \(name) FOR UPDATE", logger: logger))
        guard locked == 1 else {
            throw StorageError(
                .databaseFailure, reason: "The PostgreSQL store's lock row \(name) is missing; open the store again.")
        }
    }

    /// PostgreSQL's failure as a ``StorageError``: no connection, or one the server ended, is
    /// ``StorageError/Code/unreachable``, a lock that did not come in time
    /// ``StorageError/Code/busy``, anything else ``StorageError/Code/databaseFailure`` with the
    /// server's message (which holds no token: tokens reach the server sealed).
    static func storageError(_ error: any Error, doing what: String) -> StorageError {
        if let error = error as? StorageError { return error }
        if let transaction = error as? PostgresTransactionError {
            if let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError {
                return storageError(inner, doing: what)
            }
        }
        if error is CancellationError {
            return StorageError(.cancelled, reason: "Cancelled while \(what); nothing changed.")
        }
        guard let psql = error as? PSQLError else {
            return StorageError(
                .databaseFailure, reason: "PostgreSQL failed while \(what).", underlying: error, retryable: true)
        }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? ""
            let message = psql.serverInfo?[.message] ?? "an error"
            if message.contains("statement pooling mode") {
                return StorageError(
                    .unsupported,
                    reason:
                        "PostgreSQL refused \(what): \(message) (\(state)). The store writes in transactions: put PgBouncer in session or transaction mode for it.",
                    underlying: psql)
            }
            if state == "55P03" {
                return StorageError(.busy, reason: "A lock was held elsewhere while \(what).", underlying: psql)
            }
            // Connection and shutdown classes (08, 57P) and transient ones (40, 53) may clear.
            let transient = ["08", "57", "40", "53"].contains(String(state.prefix(2)))
            // The server ended the connection (a failover or restart terminated it, it is
            // shutting down or starting, the session idled out): the statement did not run and
            // nothing was written, as when the server cannot be reached at all.
            let ended = state.hasPrefix("08") || ["57P01", "57P02", "57P03", "57P05"].contains(state)
            return StorageError(
                ended ? .unreachable : .databaseFailure,
                reason: "PostgreSQL refused \(what): \(message) (\(state)).", underlying: psql, retryable: transient)
        case .queryCancelled:
            return StorageError(.cancelled, reason: "Cancelled while \(what); nothing changed.", underlying: psql)
        default:
            return StorageError(
                .unreachable,
                reason: "The PostgreSQL server cannot be reached (\(psql.code)) while \(what); nothing was written.",
                underlying: psql)
        }
    }
}
