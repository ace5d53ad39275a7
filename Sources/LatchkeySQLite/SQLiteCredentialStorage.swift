public import Crypto
public import Foundation
import GRDB
public import Latchkey
public import Logging

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
public final class SQLiteCredentialStorage: CredentialStorage {
    /// Where the key that seals token values comes from.
    public enum KeySource: Sendable {
        /// A file beside the database, named after it with `.key` appended; created when the
        /// database is new.
        case keyFileBesideDatabase
        /// The key file at this path; created when it and the database are new.
        case keyFile(String)
        /// This 256-bit key (from a keychain or secret manager, say).
        case key(SymmetricKey)
    }

    /// The path of the database file.
    public let path: String
    /// The path of the key file, when the key came from one.
    public let keyPath: String?
    private let pool: DatabaseQueue
    private let sealer: Sealer
    let logger: Logger

    /// Opens the store at `path`, creating it (and its folder and key file) when it is missing.
    ///
    /// - Throws: ``StorageError`` naming the file when the folder cannot be used, the key file
    ///   is missing or not 32 bytes, the key is not the store's, or the database is corrupt.
    public init(path: String, key: KeySource = .keyFileBesideDatabase, logger: Logger? = nil) throws(StorageError) {
        let path = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = path
        self.logger = logger ?? .disabled("latchkey.sqlite")
        try StoreFiles.prepareFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        let hasData = try StoreFiles.checkDatabaseFile(path)
        let symmetricKey: SymmetricKey
        switch key {
        case .keyFileBesideDatabase, .keyFile:
            let keyPath: String
            if case .keyFile(let given) = key { keyPath = given } else { keyPath = path + ".key" }
            self.keyPath = keyPath
            symmetricKey = try StoreFiles.loadOrCreateKey(at: keyPath, databaseHasData: hasData)
        case .key(let given):
            self.keyPath = nil
            guard given.bitCount == 256 else {
                throw StorageError(
                    .invalidKeyFile, reason: "The key given is \(given.bitCount) bits; Latchkey needs 256.")
            }
            symmetricKey = given
        }
        sealer = Sealer(key: symmetricKey)
        if !hasData { try StoreFiles.createDatabaseFile(path) }

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
        let sealer = self.sealer
        do {
            // One serialized connection: the store's operations are short, and a pool's
            // readers would need the dummy write described above.
            pool = try DatabaseQueue(path: path, configuration: configuration)
            try pool.writeWithoutTransaction { db in
                try Schema.migrate(db, path: path, keyPath: keyPath, sealer: sealer)
            }
        } catch {
            throw Self.storageError(error, path: path)
        }
        self.logger.debug("credential store opened", metadata: ["path": "\(path)"])
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
        try await fetch("SELECT \(Self.columns) FROM credential ORDER BY created_at, rowid", [])
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        try await fetch("SELECT \(Self.columns) FROM credential WHERE id = ?", [id.rawValue]).first
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        let (column, value): (String, String)
        switch query {
        case .subject(let subject): (column, value) = ("subject", subject)
        case .username(let username): (column, value) = ("username", username)
        case .email(let email): (column, value) = ("email", email)
        case .issuer(let issuer): (column, value) = ("issuer", issuer)
        }
        return try await fetch(
            "SELECT \(Self.columns) FROM credential WHERE \(column) = ? ORDER BY created_at, rowid", [value])
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        let row = try encode(credential)
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [row.id]) == nil else {
                throw StorageError.duplicateCredential(credential.id)
            }
            try db.execute(
                sql: """
                    INSERT INTO credential (subject, username, email, issuer, metadata, sealed_token, created_at, updated_at, id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: row.arguments)
        }
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        let row = try encode(credential)
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE credential SET subject = ?, username = ?, email = ?, issuer = ?, metadata = ?,
                        sealed_token = ?, created_at = ?, updated_at = ?, version = version + 1
                    WHERE id = ? AND version = ?
                    """,
                arguments: row.arguments + [credential.version])
            guard db.changesCount == 0 else { return }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [row.id]) != nil
            else { throw StorageError.credentialNotFound(credential.id) }
            throw StorageError.versionConflict(credential.id)
        }
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        try await write { db in
            try db.execute(sql: "DELETE FROM credential WHERE id = ?", arguments: [id.rawValue])
            guard db.changesCount == 1 else { return StorageDeletion(deleted: false, clearedDefault: false) }
            try db.execute(
                sql: "DELETE FROM setting WHERE name = 'default_credential' AND value = ?", arguments: [id.rawValue])
            return StorageDeletion(deleted: true, clearedDefault: db.changesCount == 1)
        }
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        do {
            return try await pool.read { db in
                try String.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'default_credential'")
            }.map(CredentialID.init(rawValue:))
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        try await write { db in
            guard let id else {
                try db.execute(sql: "DELETE FROM setting WHERE name = 'default_credential'")
                return
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [id.rawValue]) != nil
            else { throw StorageError.credentialNotFound(id) }
            try db.execute(
                sql: "INSERT OR REPLACE INTO setting (name, value) VALUES ('default_credential', ?)",
                arguments: [id.rawValue])
        }
    }

    // MARK: The revocation outbox

    public func enqueue(_ entry: OutboxEntry) async throws(StorageError) {
        let row = try encode(entry)
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO outbox (issuer, client_id, kind, account, sealed_token, token_expires_at,
                        created_at, attempts, next_attempt_at, last_error, id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: row.arguments)
        }
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        do {
            return try await pool.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, issuer, client_id, kind, account, sealed_token, token_expires_at, created_at,
                            attempts, next_attempt_at, last_error
                        FROM outbox ORDER BY next_attempt_at, created_at
                        """
                ).map(self.decodeOutbox)
            }
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        let row = try encode(entry)
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE outbox SET issuer = ?, client_id = ?, kind = ?, account = ?, sealed_token = ?,
                        token_expires_at = ?, created_at = ?, attempts = ?, next_attempt_at = ?, last_error = ?
                    WHERE id = ?
                    """,
                arguments: row.arguments)
        }
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        try await write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id.uuidString])
        }
    }

    private struct OutboxRow: Sendable {
        var id: String
        var issuer: String
        var clientID: String
        var kind: String
        var account: String?
        var sealedToken: Data
        var tokenExpiresAt: Double?
        var createdAt: Double
        var attempts: Int
        var nextAttemptAt: Double
        var lastError: String?

        /// In the order of the `INSERT` and `UPDATE` statements: every column, then the id.
        var arguments: StatementArguments {
            [
                issuer, clientID, kind, account, sealedToken, tokenExpiresAt, createdAt, attempts, nextAttemptAt,
                lastError, id,
            ]
        }
    }

    private func encode(_ entry: OutboxEntry) throws(StorageError) -> OutboxRow {
        OutboxRow(
            id: entry.id.uuidString, issuer: entry.provider.issuer, clientID: entry.provider.clientID,
            kind: entry.kind.rawValue, account: entry.account,
            sealedToken: try sealer.seal(Data(entry.token.utf8), context: Self.outboxContext(entry.id.uuidString)),
            tokenExpiresAt: entry.tokenExpiresAt?.timeIntervalSinceReferenceDate,
            createdAt: entry.createdAt.timeIntervalSinceReferenceDate, attempts: entry.attempts,
            nextAttemptAt: entry.nextAttemptAt.timeIntervalSinceReferenceDate, lastError: entry.lastError)
    }

    private func decodeOutbox(_ row: Row) throws -> OutboxEntry {
        let idText = try row.decode(String.self, atIndex: 0)
        guard let id = UUID(uuidString: idText),
            let kind = TokenKind(rawValue: try row.decode(String.self, atIndex: 3)),
            let plaintext = sealer.open(try row.decode(Data.self, atIndex: 5), context: Self.outboxContext(idText))
        else {
            throw StorageError(
                .corruptRecord, path: path, reason: "The outbox entry \(idText) cannot be read: its data is damaged.")
        }
        return OutboxEntry(
            id: id,
            provider: ProviderIdentity(
                issuer: try row.decode(String.self, atIndex: 1), clientID: try row.decode(String.self, atIndex: 2)),
            kind: kind, token: String(decoding: plaintext, as: UTF8.self),
            account: try row.decode(String?.self, atIndex: 4),
            tokenExpiresAt: try row.decode(Double?.self, atIndex: 6).map(Date.init(timeIntervalSinceReferenceDate:)),
            createdAt: Date(timeIntervalSinceReferenceDate: try row.decode(Double.self, atIndex: 7)),
            attempts: try row.decode(Int.self, atIndex: 8),
            nextAttemptAt: Date(timeIntervalSinceReferenceDate: try row.decode(Double.self, atIndex: 9)),
            lastError: try row.decode(String?.self, atIndex: 10))
    }

    private static func outboxContext(_ id: String) -> String { "latchkey.outbox:\(id)" }

    // MARK: Rows

    private static let columns = "id, metadata, sealed_token, created_at, updated_at, version"

    /// The column values of one credential, with its token sealed.
    private struct EncodedRow: Sendable {
        var id: String
        var subject: String?
        var username: String?
        var email: String?
        var issuer: String
        var metadata: String
        var sealedToken: Data
        var createdAt: Double
        var updatedAt: Double

        /// subject, username, email, issuer, metadata, sealed_token, created_at, updated_at, id:
        /// the order of both the `INSERT` and the `UPDATE` statement.
        var arguments: StatementArguments {
            [subject, username, email, issuer, metadata, sealedToken, createdAt, updatedAt, id]
        }
    }

    private func encode(_ credential: StoredCredential) throws(StorageError) -> EncodedRow {
        let metadata: String
        let token: Data
        do {
            metadata = String(decoding: try JSONEncoder().encode(credential.metadata), as: UTF8.self)
            token = try JSONEncoder().encode(credential.token)
        } catch {
            throw StorageError(
                .databaseFailure, reason: "The credential \(credential.id) could not be encoded.", underlying: error)
        }
        let sealed = try sealer.seal(token, context: Self.sealContext(credential.id))
        return EncodedRow(
            id: credential.id.rawValue, subject: credential.metadata.subject,
            username: credential.metadata.preferredUsername, email: credential.metadata.email,
            issuer: credential.metadata.issuer, metadata: metadata, sealedToken: sealed,
            createdAt: credential.createdAt.timeIntervalSinceReferenceDate,
            updatedAt: credential.updatedAt.timeIntervalSinceReferenceDate)
    }

    private func decode(_ row: Row) throws -> StoredCredential {
        let id = CredentialID(rawValue: try row.decode(String.self, atIndex: 0))
        let corrupt = StorageError(
            .corruptRecord, path: path, reason: "The stored credential \(id) cannot be read: its data is damaged.")
        guard let metadataText = try row.decode(String?.self, atIndex: 1),
            let sealed = try row.decode(Data?.self, atIndex: 2),
            let metadata = try? JSONDecoder().decode(CredentialMetadata.self, from: Data(metadataText.utf8))
        else { throw corrupt }
        guard let plaintext = sealer.open(sealed, context: Self.sealContext(id)) else {
            throw StorageError(
                .corruptRecord, path: path,
                reason: "The stored credential \(id) cannot be opened with the store's key: its sealed data is damaged."
            )
        }
        guard let token = try? JSONDecoder().decode(Token.self, from: plaintext) else { throw corrupt }
        return StoredCredential(
            id: id, token: token, metadata: metadata,
            createdAt: Date(timeIntervalSinceReferenceDate: try row.decode(Double.self, atIndex: 3)),
            updatedAt: Date(timeIntervalSinceReferenceDate: try row.decode(Double.self, atIndex: 4)),
            version: try row.decode(Int.self, atIndex: 5))
    }

    private static func sealContext(_ id: CredentialID) -> String { "latchkey.credential:\(id.rawValue)" }

    // MARK: Database access

    private func fetch(_ sql: String, _ arguments: [String]) async throws(StorageError) -> [StoredCredential] {
        do {
            return try await pool.read { db in
                try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map(self.decode)
            }
        } catch {
            throw Self.storageError(error, path: path)
        }
    }

    /// Runs `body` in one `IMMEDIATE` transaction, so a write never fails on a stale snapshot
    /// when another process wrote in between.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StorageError) -> T {
        do {
            return try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                guard let result else {
                    throw StorageError(.databaseFailure, reason: "The transaction returned nothing.")
                }
                return result
            }
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
        case .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_NOMEM, .SQLITE_INTERRUPT:
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
    /// for up to `busyTimeout` when another process holds a lock SQLite will not wait for (two
    /// processes creating the same new store, say).
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
                let busy = (error.underlying as? DatabaseError)?.resultCode == .SQLITE_BUSY
                guard busy, ContinuousClock.now + delay < deadline else { throw error }
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
