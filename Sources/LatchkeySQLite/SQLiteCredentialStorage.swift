public import Crypto
public import Foundation
import GRDB
public import Latchkey
public import Logging
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
    private let pool: DatabaseQueue
    let sealer: Sealer
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
        let database = try StoreFiles.checkDatabaseFile(path)
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
                symmetricKey = try StoreFiles.readKey(from: descriptor, name: "file descriptor \(number)")
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
            sealer = try Self.migrate(pool, path: path, keyPath: keyPath, sealer: Sealer(key: symmetricKey))
        } catch {
            throw Self.storageError(error, path: path)
        }
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
            guard let keyPath, let pending = try? StoreFiles.readKeyFile(at: keyPath + ".next") else { throw error }
            let next = Sealer(key: pending)
            try pool.writeWithoutTransaction { db in try Schema.migrate(db, path: path, keyPath: keyPath, sealer: next)
            }
            guard rename(keyPath + ".next", keyPath) == 0 else { throw error }
            return next
        }
    }

    /// Closes the database now, moving everything committed into the database file, instead
    /// of when the storage is released. Any use after this throws.
    public func close() throws(StorageError) {
        do {
            try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            try pool.close()
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    // MARK: CredentialStorage

    public func all() async throws(StorageError) -> [StoredCredential] {
        try await credentials(CredentialRecord.order(Column("created_at"), Column("rowid"))).credentials
    }

    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await read { db in
            try AccountRecord.order(Column("created_at"), Column("rowid")).fetchAll(db).map(\.summary)
        }
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        let read = try await credentials(CredentialRecord.filter(key: id.rawValue))
        if let damaged = read.damaged.first {
            throw StorageError(
                .corruptRecord, path: path,
                reason: "The stored credential \(damaged.id) cannot be read: \(damaged.reason).")
        }
        return read.credentials.first
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        let (column, value): (String, String)
        switch query {
        case .subject(let subject): (column, value) = ("subject", subject)
        case .username(let username): (column, value) = ("username", username)
        case .email(let email): (column, value) = ("email", email)
        case .issuer(let issuer): (column, value) = ("issuer", issuer)
        }
        return try await credentials(
            CredentialRecord.filter(Column(column) == value).order(Column("created_at"), Column("rowid"))
        ).credentials
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        var inserted = credential
        inserted.version = 1
        let record = try CredentialRecord(inserted, sealer: sealer)
        try await write { db in
            guard try CredentialRecord.exists(db, key: record.id) == false else {
                throw StorageError.duplicateCredential(credential.id)
            }
            try record.insert(db)
        }
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        // The row is written as the version it becomes, only over the version that was read.
        var next = credential
        next.version += 1
        let record = try CredentialRecord(next, sealer: sealer)
        try await write { db in
            let updated = try CredentialRecord.filter(key: record.id).filter(Column("version") == credential.version)
                .updateAll(db, Self.assignments(of: record))
            guard updated == 0 else { return }
            guard try CredentialRecord.exists(db, key: record.id) else {
                throw StorageError.credentialNotFound(credential.id)
            }
            throw StorageError.versionConflict(credential.id)
        }
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        let sealer = self.sealer
        return try await write { db in
            guard try CredentialRecord.deleteOne(db, key: id.rawValue) else {
                return StorageDeletion(deleted: false, clearedDefault: false)
            }
            guard case .some(id) = try Self.defaultMarker(db, sealer: sealer) else {
                return StorageDeletion(deleted: true, clearedDefault: false)
            }
            try db.execute(sql: "DELETE FROM setting WHERE name = 'default_credential'")
            return StorageDeletion(deleted: true, clearedDefault: true)
        }
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        let sealer = self.sealer
        let path = self.path
        return try await read { db in
            switch try Self.defaultMarker(db, sealer: sealer) {
            case .some(let id): return id
            case .none: return nil
            case .damaged:
                throw StorageError(
                    .corruptRecord, path: path,
                    reason:
                        "The default-account marker cannot be read (altered or damaged); choose the default again (latchkey use)."
                )
            }
        }
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        let sealed = try id.map { id throws(StorageError) in
            try sealer.seal(Data(id.rawValue.utf8), context: SealContext.defaultMarker)
        }
        try await write { db in
            guard let id, let sealed else {
                try db.execute(sql: "DELETE FROM setting WHERE name = 'default_credential'")
                return
            }
            guard try CredentialRecord.exists(db, key: id.rawValue) else { throw StorageError.credentialNotFound(id) }
            try db.execute(
                sql: "INSERT OR REPLACE INTO setting (name, value) VALUES ('default_credential', ?)",
                arguments: [sealed])
        }
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        let sealer = self.sealer
        return try await read { db in try Self.readOutbox(db, sealer: sealer).damaged }
    }

    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        let sealer = self.sealer
        return try await read { db in
            var damaged = try Self.readCredentials(db, CredentialRecord.all(), sealer: sealer).damaged
            if case .damaged = try Self.defaultMarker(db, sealer: sealer) {
                damaged.append(
                    DamagedRecord(
                        kind: .defaultMarker, id: "default_credential",
                        reason: "it does not open with the store's key (altered or damaged)"))
            }
            return damaged
        }
    }

    // MARK: The revocation outbox

    public func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        let record = try OutboxRecord(entry, sealer: sealer)
        try await write { db in
            if try !OutboxRecord.exists(db, key: record.id), try OutboxRecord.fetchCount(db) >= limit {
                throw StorageError.outboxFull(limit: limit)
            }
            try record.save(db)
        }
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        let sealer = self.sealer
        return try await read { db in try Self.readOutbox(db, sealer: sealer).entries }
    }

    /// Claims in one `IMMEDIATE` transaction, so processes sharing the file never claim the same
    /// entry; a claim is the entry's `claimed_until`.
    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        let sealer = self.sealer
        let (due, moment) = (date.timeIntervalSinceReferenceDate, now.timeIntervalSinceReferenceDate)
        let until = moment + Double(duration.components.seconds)
        return try await write { db in
            let claimable = OutboxRecord.filter(
                Column("failed_permanently") == false && Column("next_attempt_at") <= due
                    && (Column("claimed_until") == nil || Column("claimed_until") <= moment)
            ).order(Column("next_attempt_at"), Column("created_at")).limit(max(0, limit))
            let entries = try Self.readOutbox(db, sealer: sealer, claimable).entries
            for entry in entries {
                try db.execute(
                    sql: "UPDATE outbox SET claimed_until = ? WHERE id = ?", arguments: [until, entry.id.uuidString])
            }
            return entries
        }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        let record = try OutboxRecord(entry, sealer: sealer)
        try await write { db in
            // Absent entries are ignored: a concurrent drain may have removed it.
            if try OutboxRecord.exists(db, key: record.id) { try record.update(db) }
        }
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        try await write { db in _ = try OutboxRecord.deleteOne(db, key: id.uuidString) }
    }

    /// Every column of `record` but its id, as assignments.
    private static func assignments(of record: CredentialRecord) -> [ColumnAssignment] {
        [
            Column("subject").set(to: record.subject), Column("username").set(to: record.username),
            Column("email").set(to: record.email), Column("issuer").set(to: record.issuer),
            Column("name").set(to: record.name), Column("client_id").set(to: record.clientId),
            Column("tags").set(to: record.tags), Column("metadata").set(to: record.metadata),
            Column("sealed_token").set(to: record.sealedToken), Column("created_at").set(to: record.createdAt),
            Column("updated_at").set(to: record.updatedAt), Column("version").set(to: record.version),
            Column("access_token_expires_at").set(to: record.accessTokenExpiresAt),
            Column("has_access_token").set(to: record.hasAccessToken),
            Column("has_refresh_token").set(to: record.hasRefreshToken),
        ]
    }

    // MARK: Reading rows one by one

    /// The credentials `request` selects, each row decoded on its own: a damaged row is reported
    /// and the others are read.
    private func credentials(_ request: QueryInterfaceRequest<CredentialRecord>) async throws(StorageError)
        -> (credentials: [StoredCredential], damaged: [DamagedRecord])
    {
        let sealer = self.sealer
        let logger = self.logger
        let read = try await read { db in try Self.readCredentials(db, request, sealer: sealer) }
        for damaged in read.damaged {
            logger.error("damaged record left as it is", metadata: ["record": "\(damaged)"])
        }
        return read
    }

    static func readCredentials(_ db: Database, _ request: QueryInterfaceRequest<CredentialRecord>, sealer: Sealer)
        throws -> (credentials: [StoredCredential], damaged: [DamagedRecord])
    {
        var credentials: [StoredCredential] = []
        var damaged: [DamagedRecord] = []
        for row in try Row.fetchAll(db, request) {
            do {
                switch try CredentialRecord(row: row).open(with: sealer) {
                case .success(let credential): credentials.append(credential)
                case .failure(let record): damaged.append(record)
                }
            } catch {
                damaged.append(DamagedRecord(kind: .credential, id: row.idText, reason: "its columns are not valid"))
            }
        }
        return (credentials, damaged)
    }

    static func readOutbox(
        _ db: Database, sealer: Sealer,
        _ request: QueryInterfaceRequest<OutboxRecord> = OutboxRecord.order(
            Column("next_attempt_at"), Column("created_at"))
    ) throws -> (entries: [OutboxEntry], damaged: [DamagedRecord]) {
        var entries: [OutboxEntry] = []
        var damaged: [DamagedRecord] = []
        for row in try Row.fetchAll(db, request) {
            do {
                switch try OutboxRecord(row: row).open(with: sealer) {
                case .success(let entry): entries.append(entry)
                case .failure(let record): damaged.append(record)
                }
            } catch {
                damaged.append(DamagedRecord(kind: .outboxEntry, id: row.idText, reason: "its columns are not valid"))
            }
        }
        return (entries, damaged)
    }

    /// What the default-account marker says.
    enum DefaultMarker: Equatable {
        case none
        case some(CredentialID)
        case damaged
    }

    static func defaultMarker(_ db: Database, sealer: Sealer) throws -> DefaultMarker {
        guard let sealed = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'default_credential'")
        else { return .none }
        guard let id = sealer.open(sealed, context: SealContext.defaultMarker) else { return .damaged }
        return .some(CredentialID(rawValue: String(decoding: id, as: UTF8.self)))
    }

    // MARK: Database access

    /// Runs `body` to read, mapping failures to ``StorageError``.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StorageError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    /// Runs `body` in one transaction. GRDB opens write transactions `IMMEDIATE`, so a write never
    /// fails on a stale snapshot when another process wrote in between.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StorageError) -> T {
        do {
            return try await pool.write(body)
        } catch {
            throw Self.storageError(error, path: path)
        }
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
            let result = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(
                        returning: Result { () throws(StorageError) in
                            try SQLiteCredentialStorage(path: path, key: key, logger: logger)
                        })
                }
            }
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
