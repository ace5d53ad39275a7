import Crypto
package import LatchkeyRecords

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A read of a SQLite store that exists, through SQLite's C API alone: no GRDB, no migration,
/// no write, no thread. For a program that must start and answer in a few milliseconds (the
/// tool's `latchkey token`).
///
/// It reads only what it is sure of: a store of the schema version this Latchkey writes, whose
/// files are trusted as ``SQLiteStoreFiles`` says, sealed with the key given. Anything else —
/// an older or newer schema, a key that is not the store's (a rotation in progress), a missing
/// or damaged record — is ``Unread``, and the caller opens the store as
/// `SQLiteCredentialStorage` does, which migrates, settles or reports.
package struct SQLiteStoreReader {
    /// Why the reader did not answer (for a log line; it names no secret).
    package struct Unread: Error, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    private let connection: SQLiteConnection
    private let sealer: Sealer
    private let path: String

    /// Opens the store at `path`, sealed with the key in the key file at `keyPath`.
    package init(path: String, keyPath: String) throws(Unread) {
        let stored: (hasData: Bool, key: SymmetricKey?)
        do throws(StorageError) {
            let hasFolder = try SQLiteStoreFiles.checkFolder(Self.folder(of: path))
            let hasData = hasFolder ? try SQLiteStoreFiles.checkDatabaseFile(path).hasData : false
            stored = (hasData, hasData ? try KeyFiles.readKeyFile(at: keyPath) : nil)
        } catch {
            throw Unread("the store's files: \(error.code)")
        }
        guard stored.hasData else { throw Unread("no store yet") }
        guard let key = stored.key else { throw Unread("no key file") }
        sealer = Sealer(key: key)
        do {
            // Another process's write waits this long at most; a read never does in WAL mode.
            connection = try SQLiteConnection(path: path, busyTimeout: 5_000)
        } catch {
            throw Unread("the database: \(error)")
        }
        self.path = path
    }

    /// Opens a secret sealed with the store's key for `purpose` (a client secret in the
    /// provider list); `nil` when it does not open.
    package func openSecret(_ sealed: String, purpose: String) -> String? {
        sealer.open(sealedSecret: sealed, purpose: purpose)
    }

    private static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Runs `body` on one snapshot of the store, after checking its schema version and key.
    package func read<T>(_ body: (Snapshot) throws(Unread) -> T) throws(Unread) -> T {
        do {
            return try connection.inReadTransaction { () throws(SQLiteReadError) -> Result<T, Unread> in
                let snapshot = Snapshot(connection: connection, sealer: sealer)
                do throws(Unread) {
                    try snapshot.check()
                    return .success(try body(snapshot))
                } catch {
                    return .failure(error)
                }
            }.get()
        } catch let error as Unread {
            throw error
        } catch {
            throw Unread("the database: \(error)")
        }
    }

    /// One consistent view of the store.
    package struct Snapshot {
        fileprivate let connection: SQLiteConnection
        fileprivate let sealer: Sealer

        fileprivate func check() throws(Unread) {
            let version = try reading { () throws(SQLiteReadError) in
                try connection.prepare("PRAGMA user_version").integer()
            }
            guard version == Int64(SQLiteStoreLayout.schemaVersion) else {
                throw Unread("schema version \(version ?? 0)")
            }
            guard let check = try setting("key_check"),
                sealer.open(check, context: Sealer.keyCheckContext) == Sealer.keyCheckPlaintext
            else { throw Unread("the key is not the store's") }
        }

        /// The default account's id; `nil` when none is set. A damaged marker is unread.
        package func defaultCredentialID() throws(Unread) -> CredentialID? {
            switch DefaultMarker(sealed: try setting(DefaultMarker.settingName), sealer: sealer) {
            case .none: return nil
            case .some(let id): return id
            case .damaged: throw Unread("the default marker is damaged")
            }
        }

        /// The credential with `id`, opened; `nil` when there is none. A damaged one is unread.
        package func credential(_ id: CredentialID) throws(Unread) -> StoredCredential? {
            // A row whose columns do not decode is damaged, not absent.
            var found = false
            var record: (SealedCredential, CredentialVersionRecord?)?
            try reading { () throws(SQLiteReadError) in
                try connection.prepare("\(SealedCredential.selectRecorded) WHERE credential.id = ?").forEachRow([
                    id.rawValue
                ]) { row in
                    found = true
                    record = Self.record(row).map { ($0, Self.versionRecord(row)) }
                }
            }
            guard found else { return nil }
            guard let (row, version) = record, case .success(let credential) = row.open(with: sealer, recorded: version)
            else { throw Unread("a damaged record") }
            return credential
        }

        /// Every account, oldest first, from the clear columns alone.
        package func accounts() throws(Unread) -> [AccountSummary] {
            var accounts: [AccountSummary] = []
            var damaged = false
            try reading { () throws(SQLiteReadError) in
                try connection.prepare(
                    "SELECT \(SealedCredential.listedColumns.joined(separator: ", ")) FROM credential ORDER BY created_at, rowid"
                ).forEachRow { row in
                    if let summary = Self.summary(row) { accounts.append(summary) } else { damaged = true }
                }
            }
            guard !damaged else { throw Unread("a damaged listing") }
            return accounts
        }

        private func setting(_ name: String) throws(Unread) -> Data? {
            var value: Data?
            try reading { () throws(SQLiteReadError) in
                try connection.prepare("SELECT value FROM setting WHERE name = ?").forEachRow([name]) { row in
                    value = row.bytes(0).map { Data($0) }
                }
            }
            return value
        }

        private func reading<T>(_ body: () throws(SQLiteReadError) -> T) throws(Unread) -> T {
            do {
                return try body()
            } catch {
                throw Unread("the database: \(error)")
            }
        }

        /// A row of ``SealedCredential/columns``; `nil` when a column does not hold what it should.
        private static func record(_ row: SQLiteRow) -> SealedCredential? {
            guard let id = row.text(0), let issuer = row.text(4), let clientID = row.text(6), let tags = row.text(7),
                let metadata = row.text(8), let sealed = row.bytes(9), let createdAt = row.double(10),
                let updatedAt = row.double(11), let version = row.integer(12), let hasAccess = row.integer(14),
                let hasRefresh = row.integer(15), let needsSignIn = row.integer(16)
            else { return nil }
            return SealedCredential(
                id: id, subject: row.text(1), username: row.text(2), email: row.text(3), issuer: issuer,
                name: row.text(5), clientID: clientID, tags: tags, metadata: metadata, sealedToken: Data(sealed),
                createdAt: createdAt, updatedAt: updatedAt, version: Int(version), accessTokenExpiresAt: row.double(13),
                hasAccessToken: hasAccess != 0, hasRefreshToken: hasRefresh != 0, needsSignIn: needsSignIn != 0,
                rejectedAccessToken: row.text(17))
        }

        /// The version record of a row of ``SealedCredential/selectRecorded``; `nil` when it has none.
        private static func versionRecord(_ row: SQLiteRow) -> CredentialVersionRecord? {
            guard let id = row.text(0), let version = row.integer(18), let deleted = row.integer(19),
                let seal = row.bytes(20)
            else { return nil }
            return CredentialVersionRecord(id: id, version: Int(version), deleted: deleted != 0, seal: Data(seal))
        }

        /// A row of ``SealedCredential/listedColumns`` as a listing shows it.
        private static func summary(_ row: SQLiteRow) -> AccountSummary? {
            guard let id = row.text(0), let issuer = row.text(4), let clientID = row.text(6), let tags = row.text(7),
                let createdAt = row.double(8), let hasAccess = row.integer(10), let hasRefresh = row.integer(11),
                let needsSignIn = row.integer(12)
            else { return nil }
            return SealedCredential(
                id: id, subject: row.text(1), username: row.text(2), email: row.text(3), issuer: issuer,
                name: row.text(5), clientID: clientID, tags: tags, metadata: "", sealedToken: Data(),
                createdAt: createdAt, updatedAt: 0, version: 0, accessTokenExpiresAt: row.double(9),
                hasAccessToken: hasAccess != 0, hasRefreshToken: hasRefresh != 0, needsSignIn: needsSignIn != 0
            ).summary()
        }
    }
}
