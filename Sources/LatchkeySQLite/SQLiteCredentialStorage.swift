public import Crypto
import Foundation
import GRDB
public import Latchkey
import LatchkeySQLiteReader
public import Logging
import NIOConcurrencyHelpers
import SystemPackage

/// Credential storage in a SQLite database (through GRDB): Latchkey's embedded default.
///
/// - Token values are sealed with AES-GCM under a 256-bit key: one the caller passes in, or a
///   key file created beside the database. Account metadata (subject, username, email, issuer)
///   is stored in the clear so that it can be indexed.
/// - The database and key files are created with mode 0600, a missing folder with 0700.
/// - Several processes can share one store: every write is one `IMMEDIATE` transaction in WAL
///   mode, with a busy timeout.
/// - Problems are reported as ``StorageError`` naming the file; nothing is ever deleted,
///   truncated or overwritten to "repair" a store.
public final class SQLiteCredentialStorage: CredentialStorage, OutboxStorage {
    /// Where the key that seals token values comes from.
    public enum KeySource: Sendable {
        /// A file beside the database, named after it with `.key` appended; created when the
        /// database is new. A key file that exists before its database is never adopted.
        case keyFileBesideDatabase
        /// The key file at this path (32 bytes, or their base64 on one line), kept wherever the
        /// caller keeps keys; created when it and the database are new.
        case keyFile(String)
        /// This 256-bit key (from a keychain or secret manager, say).
        case key(SymmetricKey)
        /// The key read from this open file descriptor (a pipe from a secret manager, say):
        /// 32 bytes or their base64. The descriptor is read to its end and closed.
        case fileDescriptor(Int32)
    }

    /// The path of the database file.
    public let path: String
    /// The path of the key file, when the key came from one.
    public let keyPath: String?
    let pool: DatabaseQueue
    /// The key the store is sealed with now, and the key check it was verified against: another
    /// process's key rotation changes the check, and this process then reads the new key.
    let keys: NIOLockedValueBox<StoreKeys>
    /// The credentials last read by id, while the database is as it was then (see
    /// ``CredentialReadCache``).
    let readCache = NIOLockedValueBox(CredentialReadCache())
    /// Reads of a credential by id that callers start together, shared (``CoalescedReads``).
    let credentialReads = CoalescedReads<CredentialID, StoredCredential?>()
    /// The database's change counter, read without a hop to ``pool``'s queue; `nil` when it
    /// cannot be opened (nothing is kept then: every read reads the database).
    let changeCounter: SQLiteChangeCounter?
    let logger: Logger

    /// Opens the store at `path`, creating it (and its folder and key file) when it is missing.
    ///
    /// Files are trusted as ssh trusts its own: the folder, the database and the key file must
    /// belong to the user and be closed to other users' writes (the key file to their reads
    /// too); the database and the key file are opened without following links; a key file
    /// beside a database that does not exist yet is never adopted.
    ///
    /// - Throws: ``StorageError`` naming the file when the folder cannot be used, a file is open
    ///   to other users (``StorageError/Code/insecureFile``), the key file is missing or not a
    ///   key, the key is not the store's, or the database is corrupt.
    public init(path: String, key: KeySource = .keyFileBesideDatabase, logger: Logger? = nil) throws(StorageError) {
        let path = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = path
        self.logger = logger ?? .disabled("latchkey.sqlite")
        try StoreFiles.prepareFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        let database = try SQLiteStoreFiles.checkDatabaseFile(path)
        // The database file first, exclusively: the process that creates it is the one that may
        // create its key; a key file that was there before it is not trusted.
        let created = database.exists ? false : try StoreFiles.createDatabaseFile(path)
        let symmetricKey: SymmetricKey
        do throws(StorageError) {
            switch key {
            case .keyFileBesideDatabase, .keyFile:
                let keyPath: String
                if case .keyFile(let given) = key { keyPath = given } else { keyPath = path + ".key" }
                self.keyPath = keyPath
                symmetricKey = try StoreFiles.loadOrCreateKey(
                    at: keyPath, database: database, createdDatabase: created,
                    besideDatabase: { if case .keyFileBesideDatabase = key { true } else { false } }())
            case .key(let given):
                self.keyPath = nil
                guard given.bitCount == 256 else {
                    throw StorageError(
                        .invalidKeyFile, reason: "The key given is \(given.bitCount) bits; Latchkey needs 256.")
                }
                symmetricKey = given
            case .fileDescriptor(let number):
                self.keyPath = nil
                let descriptor = FileDescriptor(rawValue: number)
                defer { try? descriptor.close() }
                symmetricKey = try KeyFiles.readKey(from: descriptor, name: "file descriptor \(number)")
            }
        } catch {
            if created { StoreFiles.removeNewDatabaseFile(path) }
            throw error
        }

        var configuration = Configuration()
        configuration.label = "latchkey"
        configuration.busyMode = .timeout(30)
        // WAL lets readers in other processes go on while one process writes. It is set here
        // rather than with GRDB's `journalMode = .wal`, which writes a dummy table to the file
        // on every open: a damaged database must be reported before anything writes to it.
        // synchronous = NORMAL is SQLite's advice for WAL: a commit survives a crash of the
        // process; only a power loss may undo the last commits (never corrupting the file).
        // WAL is stored in the file, so only the first opener switches to it. The switch needs an
        // exclusive lock that SQLite refuses at once (SQLITE_BUSY, no busy timeout) while another
        // process converts or writes the same new file: ``open(path:key:logger:)`` tries again.
        configuration.prepareDatabase { db in
            if try String.fetchOne(db, sql: "PRAGMA journal_mode") != "wal" {
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let keyPath = self.keyPath
        do {
            // One serialized connection: the store's operations are short, and a pool's
            // readers would need the dummy write described above.
            pool = try DatabaseQueue(path: path, configuration: configuration)
            let sealer = try Self.migrate(pool, path: path, keyPath: keyPath, sealer: Sealer(key: symmetricKey))
            let check = try pool.read { db in
                try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'key_check'")
            }
            keys = NIOLockedValueBox(StoreKeys(sealer: sealer, check: check))
        } catch {
            throw Self.storageError(error, path: path)
        }
        // After the migrations: the counter's connection opens a database already in WAL mode.
        changeCounter = SQLiteChangeCounter(path: path)
        self.logger.debug("credential store opened", metadata: ["path": "\(path)"])
    }

    /// Migrates and checks the key. When the key file's key is not the store's, a key rotation
    /// may have committed without replacing the key file (the process died in between): the new
    /// key then waits in `KEY.next`, and is put in place.
    private static func migrate(_ pool: DatabaseQueue, path: String, keyPath: String?, sealer: Sealer) throws -> Sealer
    {
        do {
            try pool.writeWithoutTransaction { db in
                try Schema.migrate(db, path: path, keyPath: keyPath, sealer: sealer)
            }
            return sealer
        } catch let error as StorageError where error.code == .wrongKey {
            guard let keyPath, let pending = try? KeyFiles.readKeyFile(at: keyPath + ".next") else { throw error }
            let next = Sealer(key: pending)
            try pool.writeWithoutTransaction { db in try Schema.migrate(db, path: path, keyPath: keyPath, sealer: next)
            }
            guard rename(keyPath + ".next", keyPath) == 0 else { throw error }
            return next
        }
    }

    /// DPoP nonces, provider documents and web sessions, in the same file, for every process
    /// that opens it.
    public var capabilities: StorageCapabilities {
        StorageCapabilities(dpopNonces: self, providerDocuments: self, webSessions: self)
    }

    /// Closes the database now, moving everything committed into the database file, instead
    /// of when the storage is released. Any use after this throws.
    public func close() throws(StorageError) {
        changeCounter?.close()
        do {
            try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            try pool.close()
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

}

extension SQLiteCredentialStorage {
    /// Opens the store at `path` as ``init(path:key:logger:)`` does, on a thread of its own
    /// rather than the cooperative pool (opening does file I/O and migrations), and tries again
    /// for up to `busyTimeout` while the store is ``StorageError/Code/busy``: another process
    /// creating the same new store, or holding a lock SQLite will not wait for.
    public static func open(
        path: String, key: KeySource = .keyFileBesideDatabase, logger: Logger? = nil,
        busyTimeout: Duration = .seconds(30)
    ) async throws(StorageError) -> SQLiteCredentialStorage {
        let deadline = ContinuousClock.now + busyTimeout
        var delay = Duration.milliseconds(10)
        while true {
            // The storage is built on a thread of Dispatch's and handed over through a lock: the
            // continuation's own ordering lives in the concurrency runtime's atomics, which the
            // thread sanitizer does not see, so it took the task's first read of the storage for a
            // race with its initializer.
            let handoff = NIOLockedValueBox<Result<SQLiteCredentialStorage, StorageError>?>(nil)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    let opened = Result { () throws(StorageError) in
                        try SQLiteCredentialStorage(path: path, key: key, logger: logger)
                    }
                    handoff.withLockedValue { $0 = opened }
                    continuation.resume()
                }
            }
            let result =
                handoff.withLockedValue { $0 }
                ?? .failure(StorageError(.databaseFailure, path: path, reason: "The store was not opened."))
            switch result {
            case .success(let storage):
                return storage
            case .failure(let error):
                guard error.code == .busy, ContinuousClock.now + delay < deadline else { throw error }
                (logger ?? .disabled("latchkey.sqlite")).debug(
                    "the new store is busy; opening again", metadata: ["path": "\(path)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .milliseconds(200))
            }
        }
    }
}

extension CredentialStore {
    /// A store kept in the SQLite database at `path`, created when missing.
    ///
    /// ```swift
    /// let store = try await CredentialStore.sqlite(at: "/home/me/.config/app/credentials.sqlite")
    /// ```
    public static func sqlite(
        at path: String,
        key: SQLiteCredentialStorage.KeySource = .keyFileBesideDatabase,
        logger: Logger? = nil
    ) async throws(StorageError) -> CredentialStore {
        CredentialStore(
            storage: try await SQLiteCredentialStorage.open(path: path, key: key, logger: logger), logger: logger)
    }
}
