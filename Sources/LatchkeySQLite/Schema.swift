import Foundation
import GRDB
import Latchkey
import LatchkeySQLiteReader

/// The database schema and its migrations.
///
/// Migrations are numbered by `PRAGMA user_version` and applied inside one `BEGIN IMMEDIATE`
/// transaction: two processes opening a new store at the same moment cannot both apply them.
/// (GRDB's `DatabaseMigrator` reads which migrations were applied before it takes the write
/// lock, so two processes could race there.)
enum Schema {
    /// The migrations, in order; migration `n` brings the database to version `n + 1`.
    static let migrations: [@Sendable (Database, Sealer) throws -> Void] = [
        { db, _ in
            try db.execute(
                sql: """
                    CREATE TABLE credential (
                        id TEXT PRIMARY KEY NOT NULL,
                        subject TEXT,
                        username TEXT,
                        email TEXT,
                        issuer TEXT NOT NULL,
                        metadata TEXT NOT NULL,
                        sealed_token BLOB NOT NULL,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL
                    );
                    CREATE INDEX credential_subject ON credential(subject);
                    CREATE INDEX credential_username ON credential(username);
                    CREATE INDEX credential_email ON credential(email);
                    CREATE INDEX credential_issuer ON credential(issuer);
                    CREATE TABLE setting (
                        name TEXT PRIMARY KEY NOT NULL,
                        value BLOB
                    );
                    """)
        },
        { db, _ in
            try db.execute(
                sql: """
                    CREATE TABLE outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        issuer TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        account TEXT,
                        sealed_token BLOB NOT NULL,
                        token_expires_at REAL,
                        created_at REAL NOT NULL,
                        attempts INTEGER NOT NULL,
                        next_attempt_at REAL NOT NULL,
                        last_error TEXT
                    );
                    CREATE INDEX outbox_next_attempt ON outbox(next_attempt_at);
                    """)
        },
        { db, _ in
            // The version makes every update a compare-and-swap; the lease makes one refresh
            // per credential across the processes that share the file. A lease row names its
            // holder's host and process, so a holder that died is noticed before it expires.
            try db.execute(
                sql: """
                    ALTER TABLE credential ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
                    CREATE TABLE refresh_lease (
                        credential_id TEXT PRIMARY KEY NOT NULL,
                        holder TEXT NOT NULL,
                        host TEXT NOT NULL,
                        pid INTEGER NOT NULL,
                        expires_at REAL NOT NULL
                    );
                    """)
        },
        { db, sealer in
            // Everything that routes a token or names its account goes into the associated data
            // of its seal (see SealContext); outbox entries can fail permanently.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN failed_permanently INTEGER NOT NULL DEFAULT 0")
            try resealForVersion4(db, sealer: sealer)
        },
        { db, sealer in
            // What a listing shows, in columns, so that listing opens no sealed token.
            try db.execute(
                sql: """
                    ALTER TABLE credential ADD COLUMN name TEXT;
                    ALTER TABLE credential ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
                    ALTER TABLE credential ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE credential ADD COLUMN access_token_expires_at REAL;
                    ALTER TABLE credential ADD COLUMN has_access_token INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE credential ADD COLUMN has_refresh_token INTEGER NOT NULL DEFAULT 0;
                    """)
            let rows = try Row.fetchAll(db, sql: "SELECT id, metadata, sealed_token FROM credential")
            for row in rows {
                guard let id: String = row["id"], let metadataText: String = row["metadata"],
                    let sealed: Data = row["sealed_token"],
                    let plaintext = sealer.open(sealed, context: SealContext.credential(id, metadata: metadataText)),
                    let token = try? JSONDecoder().decode(Token.self, from: plaintext),
                    let metadata = try? JSONDecoder().decode(CredentialMetadata.self, from: Data(metadataText.utf8))
                else { continue }  // damaged: left as it is, reported when read
                try db.execute(
                    sql: """
                        UPDATE credential SET name = ?, client_id = ?, tags = ?, access_token_expires_at = ?,
                            has_access_token = ?, has_refresh_token = ?
                        WHERE id = ?
                        """,
                    arguments: [
                        metadata.name, metadata.clientID, SealedCredential.tagsText(metadata.tags),
                        token.accessToken == nil ? nil : token.expiresAt?.timeIntervalSinceReferenceDate,
                        token.accessToken != nil, token.refreshToken != nil, id,
                    ])
            }
        },
        { db, _ in
            // Drainers sharing the file claim entries, so that one revocation is sent once.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN claimed_until REAL")
        },
        { db, sealer in
            // Latchkey's own state gets columns of its own (it was kept in the application's
            // tags, where setTags could wipe it); outbox entries can wait for another (a
            // sign-out's revocations for its global sign-out); a lease row names its holder's
            // process start, so a reused pid is not taken for the holder.
            try db.execute(
                sql: """
                    ALTER TABLE credential ADD COLUMN needs_sign_in INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE credential ADD COLUMN rejected_access_token TEXT;
                    ALTER TABLE outbox ADD COLUMN waits_for TEXT;
                    ALTER TABLE refresh_lease ADD COLUMN started INTEGER NOT NULL DEFAULT 0;
                    """)
            try moveStateOutOfTags(db, sealer: sealer)
        },
        { db, sealer in
            // Each credential's version is bound to its seal: an older copy of the sealed tokens
            // put back under the current version no longer opens.
            try bindVersions(db, sealer: sealer)
        },
        { db, _ in
            // Web sessions (keyed by the hash of their cookie), indexed for back-channel logout;
            // pending sign-ins, sealed; the logout tokens seen, for the replay check. (`IF NOT
            // EXISTS`: a store whose version was set back by hand may have them already.)
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS web_session (
                        handle TEXT PRIMARY KEY NOT NULL,
                        credential_id TEXT NOT NULL,
                        issuer TEXT NOT NULL,
                        subject TEXT,
                        sid TEXT,
                        created_at REAL NOT NULL,
                        last_seen_at REAL NOT NULL,
                        expires_at REAL NOT NULL
                    );
                    CREATE INDEX IF NOT EXISTS web_session_sid ON web_session(issuer, sid);
                    CREATE INDEX IF NOT EXISTS web_session_subject ON web_session(issuer, subject);
                    CREATE TABLE IF NOT EXISTS web_pending_sign_in (
                        handle TEXT PRIMARY KEY NOT NULL,
                        sealed BLOB NOT NULL,
                        expires_at REAL NOT NULL
                    );
                    CREATE TABLE IF NOT EXISTS logout_token_seen (
                        id TEXT PRIMARY KEY NOT NULL,
                        keep_until REAL NOT NULL
                    );
                    """)
        },
        { db, _ in
            // An outbox claim names its drainer (a row of `refresh_lease`, alive as a lease
            // holder is), instead of a time it runs out at; why an entry failed is a value of
            // its own (entries of earlier versions that failed for want of a provider said so
            // in their error's text only).
            try db.execute(
                sql: """
                    ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
                    ALTER TABLE outbox ADD COLUMN failure_cause TEXT;
                    UPDATE outbox SET failure_cause = 'no_provider' WHERE last_error LIKE 'No provider is registered%';
                    """)
        },
        { db, _ in
            // A lease row names the PID namespace and the boot its pid is a number in: a holder
            // in another namespace (a container, `unshare --pid`) is judged by its row's expiry,
            // not by a pid that names another process here.
            try db.execute(
                sql: """
                    ALTER TABLE refresh_lease ADD COLUMN pid_namespace TEXT NOT NULL DEFAULT '';
                    ALTER TABLE refresh_lease ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
                    """)
        },
        { db, _ in
            // A pending sign-in names its client (a hash of its address), so that one client
            // cannot keep more than a few pending; the expired ones are swept by their expiry.
            try db.execute(
                sql: """
                    ALTER TABLE web_pending_sign_in ADD COLUMN client TEXT NOT NULL DEFAULT '';
                    CREATE INDEX IF NOT EXISTS web_pending_sign_in_client ON web_pending_sign_in(client, expires_at);
                    CREATE INDEX IF NOT EXISTS web_pending_sign_in_expiry ON web_pending_sign_in(expires_at);
                    """)
        },
        { db, sealer in
            // Each credential's last written version is recorded beside it, sealed, in the
            // transaction that writes it: a whole older row put back reads as damaged.
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS credential_version (
                        id TEXT PRIMARY KEY NOT NULL,
                        version INTEGER NOT NULL,
                        deleted INTEGER NOT NULL,
                        seal BLOB NOT NULL
                    );
                    """)
            for row in try Row.fetchAll(db, sql: "SELECT id, version FROM credential") {
                try CredentialVersionRecord(
                    id: try row.decode(forColumn: "id"), version: try row.decode(forColumn: "version"), sealer: sealer
                ).write(in: db)
            }
        },
    ]

    /// Seals every credential again with its version bound. A row that does not open is left as
    /// it is: it is reported as damaged, never wiped.
    private static func bindVersions(_ db: Database, sealer: Sealer) throws {
        for row in try Row.fetchAll(db, sql: "SELECT \(SQL.list(SealedCredential.columns)) FROM credential") {
            try SealedCredential(row: row).bindingVersion(with: sealer)?.replace(in: db)
        }
    }

    /// Moves the state kept in tags into its columns, sealing each such row again. A row that
    /// does not open is left as it is: it is reported as damaged.
    private static func moveStateOutOfTags(_ db: Database, sealer: Sealer) throws {
        let tagged = try Row.fetchAll(
            db,
            sql: "SELECT \(SQL.list(SealedCredential.columns)) FROM credential WHERE tags LIKE '%\"latchkey.%'")
        for row in tagged {
            try SealedCredential(row: row).movingStateOutOfTags(with: sealer)?.replace(in: db)
        }
    }

    /// Seals every credential, outbox entry and the default marker again, bound as version 4
    /// binds them. A row that does not open with the old binding is left as it is: it is
    /// reported as damaged, never wiped.
    private static func resealForVersion4(_ db: Database, sealer: Sealer) throws {
        for row in try Row.fetchAll(db, sql: "SELECT id, metadata, sealed_token FROM credential") {
            guard let id: String = row["id"], let metadataText: String = row["metadata"],
                let sealed: Data = row["sealed_token"],
                let plaintext = sealer.open(sealed, context: SealContext.legacyCredential(id)),
                let metadata = try? JSONDecoder().decode(CredentialMetadata.self, from: Data(metadataText.utf8)),
                let canonical = try? SealedCredential.encoder.encode(metadata)
            else { continue }
            let text = String(decoding: canonical, as: UTF8.self)
            try db.execute(
                sql: "UPDATE credential SET metadata = ?, sealed_token = ? WHERE id = ?",
                arguments: [
                    text, try sealer.seal(plaintext, context: SealContext.credential(id, metadata: text)), id,
                ])
        }
        for row in try Row.fetchAll(db, sql: "SELECT id, issuer, client_id, kind, sealed_token FROM outbox") {
            guard let id: String = row["id"], let issuer: String = row["issuer"], let client: String = row["client_id"],
                let kind: String = row["kind"], let sealed: Data = row["sealed_token"],
                let plaintext = sealer.open(sealed, context: SealContext.legacyOutbox(id))
            else { continue }
            try db.execute(
                sql: "UPDATE outbox SET sealed_token = ? WHERE id = ?",
                arguments: [
                    try sealer.seal(
                        plaintext, context: SealContext.outbox(id, issuer: issuer, clientID: client, kind: kind)),
                    id,
                ])
        }
        if let id = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'default_credential'") {
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = 'default_credential'",
                arguments: [try sealer.seal(Data(id.utf8), context: SealContext.defaultMarker)])
        }
    }

    static var currentVersion: Int { migrations.count }
    // The quick reader reads this version alone (SQLiteStoreLayout.schemaVersion); a test opens
    // a new store with it.

    /// Brings the database up to ``currentVersion``, and checks (or, in a new store, records)
    /// that `sealer` holds the store's key.
    static func migrate(_ db: Database, path: String, keyPath: String?, sealer: Sealer) throws {
        try db.inTransaction(.immediate) {
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            guard version <= currentVersion else {
                throw StorageError(
                    .unsupportedSchema, path: path,
                    reason:
                        "The credential database has schema version \(version); this Latchkey reads up to \(currentVersion). Use a newer Latchkey."
                )
            }
            // The key is checked before migrating (re-sealing rows with a wrong key would skip
            // them all); a new database gets its key check once its tables exist.
            if version > 0 { try checkKey(db, path: path, keyPath: keyPath, sealer: sealer) }
            for migration in migrations[version...] { try migration(db, sealer) }
            if version < currentVersion { try db.execute(sql: "PRAGMA user_version = \(currentVersion)") }
            if version == 0 { try checkKey(db, path: path, keyPath: keyPath, sealer: sealer) }
            return .commit
        }
    }

    private static func checkKey(_ db: Database, path: String, keyPath: String?, sealer: Sealer) throws {
        let stored = try Data?.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'key_check'") ?? nil
        guard let stored else {
            let sealed = try sealer.seal(Sealer.keyCheckPlaintext, context: Sealer.keyCheckContext)
            try db.execute(sql: "INSERT INTO setting (name, value) VALUES ('key_check', ?)", arguments: [sealed])
            return
        }
        guard sealer.open(stored, context: Sealer.keyCheckContext) == Sealer.keyCheckPlaintext else {
            let source = keyPath.map { "The key in \($0)" } ?? "The key given"
            throw StorageError(
                .wrongKey, path: keyPath ?? path,
                reason:
                    "\(source) is not the key of the credential database at \(path); the stored tokens cannot be opened with it."
            )
        }
    }
}
