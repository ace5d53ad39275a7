public import Foundation
import GRDB
public import Latchkey
import LatchkeySQLiteReader
import Logging
import NIOConcurrencyHelpers

extension SQLiteCredentialStorage {
    private static let selectAll = SealedCredential.selectRecorded
    private static let oldestFirst = "ORDER BY credential.created_at, credential.rowid"

    public func all() async throws(StorageError) -> [StoredCredential] {
        try await credentials("\(Self.selectAll) \(Self.oldestFirst)").values
    }

    /// Listed again only when the database changed since the last listing (see
    /// ``CredentialReadCache``): `find(where:)` filters the summaries in memory.
    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await cachedRead(
            cached: { cache, version in cache.accounts(counter: version) },
            read: { db, _ in
                try Row.fetchAll(
                    db,
                    sql: "SELECT \(SQL.list(SealedCredential.listedColumns)) FROM credential ORDER BY created_at, rowid"
                ).map(SealedCredential.summary(row:))
            },
            keep: { cache, listed, stamp in cache.keep(accounts: listed, stamp: stamp) })
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        // The hot path (`accessToken()` on a valid token): the counter, the cache, nothing else.
        let counter = changeCounter?.value()
        if let counter, let kept = readCache.withLockedValue({ $0.credential(id, counter: counter) }) {
            return kept
        }
        // Callers that miss at once (after a refresh, many waiting on it) read it once.
        guard let counter else { return try await readCredential(id) }
        return try await credentialReads.value(of: id, counter: counter) { () async throws(StorageError) in
            try await self.readCredential(id)
        }
    }

    /// `accessToken()`'s hot path: the counter, the cache's token, nothing copied.
    public func validAccessToken(for id: CredentialID, minimumValidity: TimeInterval, at date: Date)
        async throws(StorageError) -> String?
    {
        if let counter = changeCounter?.value(),
            let token = readCache.withLockedValue({
                $0.accessToken(id, counter: counter, minimumValidity: minimumValidity, at: date)
            })
        {
            return token
        }
        return try await credential(for: id)?.accessToken(minimumValidity: minimumValidity, at: date)
    }

    /// Reads the credential `id` from the database (through the read cache) and opens it.
    private func readCredential(_ id: CredentialID) async throws(StorageError) -> StoredCredential? {
        let read = try await cachedRead(
            cached: { cache, version in cache.credential(id, counter: version).map { ([$0], []) } },
            read: { db, sealer in
                try Self.readCredentials(
                    db, "\(Self.selectAll) WHERE credential.id = ?", arguments: [id.rawValue], sealer: sealer)
            },
            keep: { cache, read, stamp in if let credential = read.values.first { cache.keep(credential, stamp: stamp) }
            })
        if let damaged = read.damaged.first {
            throw StorageError(
                .corruptRecord, path: path,
                reason: "The stored credential \(damaged.id) cannot be read: \(damaged.reason).")
        }
        return read.values.first
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        let (column, value): (String, String)
        switch query {
        case .subject(let subject): (column, value) = ("subject", subject)
        case .username(let username): (column, value) = ("username", username)
        case .email(let email): (column, value) = ("email", email)
        case .issuer(let issuer): (column, value) = ("issuer", issuer)
        }
        return try await credentials("\(Self.selectAll) WHERE credential.\(column) = ? \(Self.oldestFirst)", [value])
            .values
    }

    public func credentials(ids: [CredentialID]) async throws(StorageError) -> [StoredCredential] {
        var found: [StoredCredential] = []
        // Within SQLite's limit on bound values, however many ids there are.
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)].map(\.rawValue)
            let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let read = try await credentials(
                "\(Self.selectAll) WHERE credential.id IN (\(placeholders))", StatementArguments(chunk))
            if let damaged = read.damaged.first {
                throw StorageError(
                    .corruptRecord, path: path,
                    reason: "The stored credential \(damaged.id) cannot be read: \(damaged.reason).")
            }
            found += read.values
        }
        return found.inOrder(of: ids)
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        var inserted = credential
        inserted.version = 1
        let first = inserted
        try await write { db, sealer in
            let row = try SealedCredential(first, sealer: sealer)
            guard try !Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [row.id]).isTrue
            else { throw StorageError.duplicateCredential(credential.id) }
            try db.execute(
                sql: """
                    INSERT INTO credential (\(SQL.list(SealedCredential.columns)))
                    VALUES (\(SQL.placeholders(SealedCredential.columns)))
                    """, arguments: row.arguments)
            try CredentialVersionRecord(id: row.id, version: row.version, sealer: sealer).write(in: db)
        }
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        // The row is written as the version it becomes, only over the version that was read.
        var next = credential
        next.version += 1
        let written = next
        try await write { db, sealer in
            let row = try SealedCredential(written, sealer: sealer)
            guard try row.replace(in: db, and: "AND version = ?", [credential.version]) == 0 else {
                try CredentialVersionRecord(id: row.id, version: row.version, sealer: sealer).write(in: db)
                return
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [row.id]).isTrue
            else { throw StorageError.credentialNotFound(credential.id) }
            throw StorageError.versionConflict(credential.id)
        }
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        // Without a version, nothing stops it: a deletion is all there is.
        try await delete(id, version: nil, fence: nil) ?? .notFound
    }

    public func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try await delete(id, version: version, fence: nil)
    }

    /// Deletes the credential (when it still has `version`, if one is given) and clears the
    /// default if it pointed to it; `nil` when the record has another version. With `fence`,
    /// only while its lease is held.
    func delete(_ id: CredentialID, version: Int?, fence: LeaseFence?) async throws(StorageError)
        -> StorageDeletion?
    {
        try await write { db, sealer in
            try fence?.check(db)
            // What is deleted is recorded as deleted, so that a copy of it put back is not read.
            let deleting = try Int.fetchOne(
                db, sql: "SELECT version FROM credential WHERE id = ?\(version == nil ? "" : " AND version = ?")",
                arguments: version.map { [id.rawValue, $0] } ?? [id.rawValue])
            if let version {
                try db.execute(
                    sql: "DELETE FROM credential WHERE id = ? AND version = ?", arguments: [id.rawValue, version])
            } else {
                try db.execute(sql: "DELETE FROM credential WHERE id = ?", arguments: [id.rawValue])
            }
            guard db.changesCount > 0 else {
                let exists = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [id.rawValue]
                ).isTrue
                return exists ? nil : .notFound
            }
            if let deleting {
                try CredentialVersionRecord(id: id.rawValue, version: deleting, deleted: true, sealer: sealer).write(
                    in: db)
            }
            guard case .some(id) = try Self.defaultMarker(db, sealer: sealer) else {
                return .deletedCredential
            }
            try db.execute(sql: "DELETE FROM setting WHERE name = ?", arguments: [DefaultMarker.settingName])
            return .deletedDefault
        }
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        // Every command and agent request that names no account asks this first: kept, as the
        // credentials are, while the database is unchanged, so that no seal is opened for it.
        let path = self.path
        return try await cachedRead(
            cached: { cache, version in cache.defaultID(counter: version) },
            read: { db, sealer in try Self.defaultMarker(db, sealer: sealer).credentialID(path: path) },
            keep: { cache, id, stamp in cache.keep(defaultID: id, stamp: stamp) })
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        try await write { db, sealer in
            guard let id else {
                try db.execute(sql: "DELETE FROM setting WHERE name = ?", arguments: [DefaultMarker.settingName])
                return
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM credential WHERE id = ?", arguments: [id.rawValue]).isTrue
            else { throw StorageError.credentialNotFound(id) }
            try db.execute(
                sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)",
                arguments: [DefaultMarker.settingName, try DefaultMarker.seal(id, with: sealer)])
        }
    }

    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        try await read { db, sealer in
            var damaged = try Self.readCredentials(db, Self.selectAll, sealer: sealer).damaged
            if case .damaged = try Self.defaultMarker(db, sealer: sealer) {
                damaged.append(DefaultMarker.damagedRecord)
            }
            return damaged
        }
    }

    /// The credentials `sql` selects, a damaged row logged, reported and left as it is.
    private func credentials(_ sql: String, _ arguments: StatementArguments = []) async throws(StorageError)
        -> (values: [StoredCredential], damaged: [DamagedRecord])
    {
        let read = try await read { db, sealer in
            try Self.readCredentials(db, sql, arguments: arguments, sealer: sealer)
        }
        for damaged in read.damaged {
            logger.error("damaged record left as it is", metadata: ["record": "\(damaged)"])
        }
        return read
    }
}

extension Optional where Wrapped == Bool {
    /// Whether a `SELECT 1` found a row.
    var isTrue: Bool { self == true }
}
