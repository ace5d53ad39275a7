import Foundation
import Latchkey
import Logging
import PostgresNIO

/// The tables of a PostgreSQL store and their migrations.
///
/// The schema's version is a row of `latchkey_schema`. Migrations run in one transaction that
/// first locks that table, so instances starting at once migrate one after the other: the
/// second finds the work done. (A table lock, not an advisory lock: see
/// `PostgresCredentialStorage.lockRow(_:on:logger:)`.)
enum PostgresSchema {
    /// The migrations, in order; migration `n` brings the schema to version `n + 1`.
    static let migrations: [[PostgresQuery]] = [
        [
            """
            CREATE TABLE latchkey_setting (
                name text PRIMARY KEY,
                value bytea NOT NULL
            )
            """,
            // `position` keeps insertion order for "oldest first" among equal creation dates.
            """
            CREATE TABLE latchkey_credential (
                id text PRIMARY KEY,
                position bigserial NOT NULL,
                subject text,
                username text,
                email text,
                issuer text NOT NULL,
                name text,
                client_id text NOT NULL,
                tags text NOT NULL,
                metadata text NOT NULL,
                sealed_token bytea NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                version bigint NOT NULL,
                access_token_expires_at double precision,
                has_access_token boolean NOT NULL,
                has_refresh_token boolean NOT NULL
            )
            """,
            "CREATE INDEX latchkey_credential_subject ON latchkey_credential (subject)",
            "CREATE INDEX latchkey_credential_username ON latchkey_credential (username)",
            "CREATE INDEX latchkey_credential_email ON latchkey_credential (email)",
            "CREATE INDEX latchkey_credential_issuer ON latchkey_credential (issuer)",
            """
            CREATE TABLE latchkey_outbox (
                id text PRIMARY KEY,
                issuer text NOT NULL,
                client_id text NOT NULL,
                kind text NOT NULL,
                account text,
                sealed_token bytea NOT NULL,
                token_expires_at double precision,
                created_at double precision NOT NULL,
                attempts integer NOT NULL,
                next_attempt_at double precision NOT NULL,
                last_error text,
                failed_permanently boolean NOT NULL,
                claimed_until double precision
            )
            """,
            "CREATE INDEX latchkey_outbox_due ON latchkey_outbox (next_attempt_at, created_at)",
        ],
        [
            // Latchkey's own state gets columns of its own (it was kept in the application's
            // tags, where setTags could wipe it; `moveStateOutOfTags` moves it); outbox entries
            // can wait for another (a sign-out's revocations for its global sign-out).
            "ALTER TABLE latchkey_credential ADD COLUMN needs_sign_in boolean NOT NULL DEFAULT false",
            "ALTER TABLE latchkey_credential ADD COLUMN rejected_access_token text",
            "ALTER TABLE latchkey_outbox ADD COLUMN waits_for text",
        ],
        // Each credential's version is bound to its seal (`bindVersions` seals every row again).
        [],
        [
            """
            CREATE TABLE IF NOT EXISTS latchkey_web_session (
                handle text PRIMARY KEY,
                credential_id text NOT NULL,
                issuer text NOT NULL,
                subject text,
                sid text,
                created_at double precision NOT NULL,
                last_seen_at double precision NOT NULL,
                expires_at double precision NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS latchkey_web_session_sid ON latchkey_web_session (issuer, sid)",
            "CREATE INDEX IF NOT EXISTS latchkey_web_session_subject ON latchkey_web_session (issuer, subject)",
            """
            CREATE TABLE IF NOT EXISTS latchkey_web_pending_sign_in (
                handle text PRIMARY KEY,
                sealed bytea NOT NULL,
                expires_at double precision NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS latchkey_logout_token_seen (
                id text PRIMARY KEY,
                keep_until double precision NOT NULL
            )
            """,
        ],
        [
            // An outbox claim names its drainer, which renews it while it works; why an entry
            // failed is a value of its own (entries of earlier versions that failed for want of
            // a provider said so in their error's text only).
            "ALTER TABLE latchkey_outbox ADD COLUMN IF NOT EXISTS claimed_by text",
            "ALTER TABLE latchkey_outbox ADD COLUMN IF NOT EXISTS failure_cause text",
            """
            UPDATE latchkey_outbox SET failure_cause = 'no_provider'
            WHERE failure_cause IS NULL AND last_error LIKE 'No provider is registered%'
            """,
        ],
        [
            // A pending sign-in names its client (a hash of its address), so that one client
            // cannot keep more than a few pending; the expired ones are swept by their expiry.
            "ALTER TABLE latchkey_web_pending_sign_in ADD COLUMN IF NOT EXISTS client text NOT NULL DEFAULT ''",
            """
            CREATE INDEX IF NOT EXISTS latchkey_web_pending_sign_in_client
            ON latchkey_web_pending_sign_in (client, expires_at)
            """,
            """
            CREATE INDEX IF NOT EXISTS latchkey_web_pending_sign_in_expiry
            ON latchkey_web_pending_sign_in (expires_at)
            """,
        ],
        [
            // Nothing rests on a lock tied to a server connection, which a pooler in transaction
            // mode shares between clients: the lease is a row (`PostgresCredentialStorage+Lease`),
            // changes are a log every instance reads (`PostgresChangeFeed`), the outbox's bound a
            // row lock.
            """
            CREATE TABLE IF NOT EXISTS latchkey_lease (
                id text PRIMARY KEY,
                holder text NOT NULL,
                expires_at double precision NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS latchkey_change (
                seq bigserial PRIMARY KEY,
                origin text NOT NULL,
                change text NOT NULL,
                credential_id text,
                made_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            "CREATE INDEX IF NOT EXISTS latchkey_change_made_at ON latchkey_change (made_at)",
            """
            INSERT INTO latchkey_setting (name, value) VALUES ('outbox_limit_lock', ''::bytea)
            ON CONFLICT (name) DO NOTHING
            """,
        ],
        // When each setting was last written, in order: DPoP nonces beyond the limit go oldest
        // first (`DPoPNonceLimit`).
        ["ALTER TABLE latchkey_setting ADD COLUMN IF NOT EXISTS written bigserial"],
    ]

    static var currentVersion: Int { migrations.count }

    /// Brings the schema up to ``currentVersion`` and checks (or, in a new database, records)
    /// that `sealer` holds the store's key.
    static func migrate(_ client: PostgresClient, sealer: Sealer, logger: Logger) async throws(StorageError) {
        do {
            try await createSchemaTable(client, logger: logger)
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("LOCK TABLE latchkey_schema IN EXCLUSIVE MODE", logger: logger)
                var version = 0
                for try await stored in try await connection.query(
                    "SELECT version FROM latchkey_schema", logger: logger
                ).decode(Int.self) {
                    version = stored
                }
                guard version <= currentVersion else {
                    throw StorageError(
                        .unsupportedSchema,
                        reason:
                            "The PostgreSQL store has schema version \(version); this Latchkey reads up to \(currentVersion). Use a newer Latchkey."
                    )
                }
                if version > 0 { try await checkKey(connection, sealer: sealer, logger: logger) }
                for migration in migrations[version...] {
                    for statement in migration { try await connection.query(statement, logger: logger) }
                }
                if version == 1 { try await moveStateOutOfTags(connection, sealer: sealer, logger: logger) }
                if (1...2).contains(version) { try await bindVersions(connection, sealer: sealer, logger: logger) }
                if version == 0 {
                    try await connection.query(
                        "INSERT INTO latchkey_schema (version) VALUES (\(currentVersion))", logger: logger)
                    try await checkKey(connection, sealer: sealer, logger: logger)
                } else if version < currentVersion {
                    try await connection.query("UPDATE latchkey_schema SET version = \(currentVersion)", logger: logger)
                }
                if version < currentVersion {
                    logger.info("schema migrated", metadata: ["from": "\(version)", "to": "\(currentVersion)"])
                }
            }
        } catch {
            throw PostgresCredentialStorage.storageError(error, doing: "migrating the schema")
        }
    }

    /// What PostgreSQL answers a `CREATE TABLE IF NOT EXISTS` that raced another creating the
    /// same table (the statement is not atomic): a unique violation on the catalog (23505), the
    /// relation (42P07) or its row type (42710) already existing. Each is raised only once the
    /// other creator committed, so trying again finds the table.
    static let lostCreationRace: Set<String> = ["23505", "42P07", "42710"]

    /// Creates the table of the schema's version unless it exists. Instances creating it at once
    /// may lose PostgreSQL's race on its catalog (``lostCreationRace``): the loser tries again.
    private static func createSchemaTable(_ client: PostgresClient, logger: Logger) async throws {
        let attempts = 5
        for attempt in 1...attempts {
            do {
                for try await _ in try await client.query(
                    "CREATE TABLE IF NOT EXISTS latchkey_schema (version integer NOT NULL)", logger: logger)
                {}
                return
            } catch let error as PSQLError where attempt < attempts {
                guard lostCreationRace.contains(error.serverInfo?[.sqlState] ?? "") else { throw error }
                logger.debug("schema table created by another instance meanwhile; trying again")
            }
        }
    }

    /// Moves the state kept in tags into its columns, sealing each such row again (its metadata
    /// changes). A row that does not open is left as it is: it is reported as damaged.
    private static func moveStateOutOfTags(_ connection: PostgresConnection, sealer: Sealer, logger: Logger)
        async throws
    {
        var rows: [PostgresRow] = []
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: PostgresCredentialStorage.credentialColumns) FROM latchkey_credential
            WHERE tags LIKE '%"latchkey.%'
            """, logger: logger)
        {
            rows.append(row)
        }
        for row in rows {
            guard let sealed = try PostgresCredentialStorage.sealedCredential(row).movingStateOutOfTags(with: sealer)
            else { continue }
            for try await _ in try await connection.query(
                try PostgresCredentialStorage.updateQuery(sealed, where: nil), logger: logger)
            {}
        }
    }

    /// Seals every credential again with its version bound. A row that does not open is left as
    /// it is: it is reported as damaged, never wiped.
    private static func bindVersions(_ connection: PostgresConnection, sealer: Sealer, logger: Logger) async throws {
        var rows: [PostgresRow] = []
        for try await row in try await connection.query(
            "SELECT \(unescaped: PostgresCredentialStorage.credentialColumns) FROM latchkey_credential", logger: logger)
        {
            rows.append(row)
        }
        for row in rows {
            guard let sealed = try PostgresCredentialStorage.sealedCredential(row).bindingVersion(with: sealer)
            else { continue }
            for try await _ in try await connection.query(
                try PostgresCredentialStorage.updateQuery(sealed, where: nil), logger: logger)
            {}
        }
    }

    private static func checkKey(_ connection: PostgresConnection, sealer: Sealer, logger: Logger) async throws {
        var stored: Data?
        for try await value in try await connection.query(
            "SELECT value FROM latchkey_setting WHERE name = 'key_check'", logger: logger
        ).decode(Data.self) {
            stored = value
        }
        guard let stored else {
            let sealed = try sealer.seal(Sealer.keyCheckPlaintext, context: Sealer.keyCheckContext)
            try await connection.query(
                "INSERT INTO latchkey_setting (name, value) VALUES ('key_check', \(sealed))", logger: logger)
            return
        }
        guard sealer.open(stored, context: Sealer.keyCheckContext) == Sealer.keyCheckPlaintext else {
            throw StorageError(
                .wrongKey,
                reason:
                    "The key given is not the key of this PostgreSQL store; its tokens cannot be opened with it. Nothing was changed."
            )
        }
    }
}
