import Foundation
import GRDB
import Latchkey
import LatchkeySQLiteReader
import Logging
import NIOConcurrencyHelpers

/// The key a SQLite store is sealed with, as this process knows it.
struct StoreKeys: Sendable {
    var sealer: Sealer
    /// The sealed key check the key was verified against (`nil` before the store had one).
    var check: Data?
}

/// How the storage reads and writes: every transaction first checks that the store is still
/// sealed with the key this process holds (another process may have rotated it, `latchkey key
/// rotate`) and reads the new key from the key file when it is not, so a row is never sealed
/// or opened with a key that is no longer the store's.
extension SQLiteCredentialStorage {
    /// Runs `body` to read, with the store's current key.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database, Sealer) throws -> T) async throws(StorageError) -> T {
        do {
            return try await pool.read { db in try body(db, try self.currentSealer(db)) }
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    /// Reads through the read cache (``CredentialReadCache``): while the database is unchanged
    /// `cached` answers from memory, on the caller's thread, after one statement of the change
    /// counter and with no seal opened; otherwise `body` reads in one transaction with the
    /// store's current key, as ``read(_:)`` does, and `keep` puts what it read in the cache.
    func cachedRead<T: Sendable>(
        cached: @escaping @Sendable (inout CredentialReadCache, SQLiteChangeCounter.Value) -> T?,
        read body: @escaping @Sendable (Database, Sealer) throws -> T,
        keep: @escaping @Sendable (inout CredentialReadCache, T, CredentialReadCache.Stamp) -> Void
    ) async throws(StorageError) -> T {
        if let version = changeCounter?.value(), let hit = readCache.withLockedValue({ cached(&$0, version) }) {
            return hit
        }
        do {
            return try await pool.unsafeRead { db in
                // The stamp before the read begins: a commit after it, however soon, changes
                // the counter, and what this read keeps is not taken again.
                let stamp = self.changeCounter?.value().map { version in
                    self.readCache.withLockedValue { $0.stamp(counter: version) }
                }
                var value: T?
                try db.inTransaction(.deferred) {
                    value = try body(db, try self.currentSealer(db))
                    return .commit
                }
                guard let value else { throw DatabaseError(message: "The read returned nothing.") }
                if let stamp { self.readCache.withLockedValue { keep(&$0, value, stamp) } }
                return value
            }
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    /// Runs `body` in one transaction, with the store's current key. GRDB opens write
    /// transactions `IMMEDIATE`, so a write never fails on a stale snapshot when another
    /// process wrote in between, and no key rotation commits between the check and the write.
    ///
    /// A write is never cancelled with its caller's task (GRDB would refuse it, or interrupt
    /// it): what it records already happened at the provider — a rotated refresh token, a
    /// revocation, a lease to release — and must not be lost because the caller went away.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database, Sealer) throws -> T) async throws(StorageError) -> T
    {
        let path = self.path
        // GRDB's callback form has no cancellation handler (its async form interrupts the write
        // when the task is cancelled), and it needs no task of its own to shield the write.
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, StorageError>, Never>) in
            pool.asyncWrite { db in
                // Before anything is written: no read after this write can take a row cached
                // before it (the connection runs one closure at a time).
                self.readCache.withLockedValue { $0.wrote() }
                return try body(db, try self.currentSealer(db))
            } completion: { _, result in
                continuation.resume(returning: result.mapError { Self.storageError($0, path: path) })
            }
        }
        return try result.get()
    }

    /// The key the store is sealed with: the one held, unless the key check changed since.
    func currentSealer(_ db: Database) throws -> Sealer {
        let check = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'key_check'")
        let known = keys.withLockedValue { $0 }
        if check == known.check { return known.sealer }
        // A key rotation committed: the new key is still in KEY.next when the rotating process
        // has not put it in place yet, else in the key file. KEY.next is read first: read the
        // other way round, the key file could be read just before the rename (the old key) and
        // KEY.next just after it (gone), and the new key found in neither.
        if let check, let keyPath {
            for candidate in [keyPath + ".next", keyPath] {
                guard let key = try? KeyFiles.readKeyFile(at: candidate) else { continue }
                let sealer = Sealer(key: key)
                if sealer.open(check, context: Sealer.keyCheckContext) == Sealer.keyCheckPlaintext {
                    keys.withLockedValue { $0 = StoreKeys(sealer: sealer, check: check) }
                    logger.debug("the store's key was rotated; using the new one", metadata: ["path": "\(path)"])
                    return sealer
                }
            }
        }
        if let check, known.sealer.open(check, context: Sealer.keyCheckContext) == Sealer.keyCheckPlaintext {
            keys.withLockedValue { $0.check = check }
            return known.sealer
        }
        throw StorageError(
            .wrongKey, path: keyPath ?? path,
            reason:
                "The store was sealed with a new key (latchkey key rotate) that this process does not hold; open it again with the new key."
        )
    }

    /// The credentials a query selects, each row opened on its own: a damaged one is reported
    /// and the others are read.
    static func readCredentials(_ db: Database, _ sql: String, arguments: StatementArguments = [], sealer: Sealer)
        throws -> (values: [StoredCredential], damaged: [DamagedRecord])
    {
        SealedRecords.open(try Row.fetchAll(db, sql: sql, arguments: arguments), kind: .credential, id: \.idText) {
            try SealedCredential(row: $0).open(with: sealer, recorded: try CredentialVersionRecord(row: $0))
        }
    }

    /// The outbox entries a query selects, each row opened on its own.
    static func readOutbox(_ db: Database, _ sql: String, arguments: StatementArguments = [], sealer: Sealer) throws
        -> (values: [OutboxEntry], damaged: [DamagedRecord])
    {
        SealedRecords.open(try Row.fetchAll(db, sql: sql, arguments: arguments), kind: .outboxEntry, id: \.idText) {
            try SealedOutboxEntry(row: $0).open(with: sealer)
        }
    }

    /// What the default-account marker says.
    static func defaultMarker(_ db: Database, sealer: Sealer) throws -> DefaultMarker {
        DefaultMarker(
            sealed: try Data.fetchOne(
                db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [DefaultMarker.settingName]),
            sealer: sealer)
    }

    /// Maps any failure of GRDB or SQLite to a ``StorageError`` naming the database file.
    static func storageError(_ error: any Error, path: String) -> StorageError {
        if let error = error as? StorageError { return error }
        guard let error = error as? DatabaseError else {
            return StorageError(.databaseFailure, path: path, reason: "The credential database failed.")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return StorageError(
                .corruptDatabase, path: path,
                reason:
                    "The credential database is damaged or is not a SQLite database (SQLite error \(error.resultCode.rawValue)). It was left as it is.",
                underlying: error)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH:
            return StorageError(
                .fileNotAccessible, path: path,
                reason:
                    "The credential database cannot be opened for reading and writing (SQLite error \(error.resultCode.rawValue)).",
                underlying: error)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StorageError(
                .busy, path: path,
                reason:
                    "The credential database is locked by another process (SQLite error \(error.resultCode.rawValue)); trying again shortly will do.",
                underlying: error)
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_NOMEM, .SQLITE_INTERRUPT:
            return StorageError(
                .databaseFailure, path: path,
                reason:
                    "The credential database is busy, full or failed to read or write (SQLite error \(error.resultCode.rawValue)); trying again later may help.",
                underlying: error, retryable: true)
        default:
            return StorageError(
                .databaseFailure, path: path,
                reason: "The credential database failed (SQLite error \(error.resultCode.rawValue)).", underlying: error
            )
        }
    }
}
