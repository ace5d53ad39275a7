public import Crypto
public import Foundation
public import Latchkey
public import Logging
public import PostgresNIO

/// Credential storage in PostgreSQL, for a fleet of server instances that share their users'
/// credentials.
///
/// - Tokens are sealed with AES-GCM under a 256-bit key the caller passes in (from a secret
///   manager): the database never holds a token in the clear. What indexes and listings read
///   (subject, username, email, issuer, tags) is in the clear and bound into the seal.
/// - The refresh lease of a credential is a transaction-scoped advisory lock: one refresh per
///   credential fleet-wide, released at once when its holder's connection ends.
/// - Outbox entries are claimed with `FOR UPDATE SKIP LOCKED`, so the instances drain together
///   and each revocation is sent once; a claim runs out when its instance dies.
/// - Every change is announced with `NOTIFY` (identifiers only, never a token), and a
///   ``CredentialStore`` over this storage publishes other instances' changes on
///   ``CredentialStore/changes``.
///
/// The `PostgresClient` must be running (`client.run()`, in a service group, say) and should
/// allow at least three connections: the change feed keeps one, each refresh lease holds one.
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// async let running: Void = client.run()
/// let storage = try await PostgresCredentialStorage.open(client: client, key: key)
/// let store = CredentialStore(storage: storage)
/// ```
public final class PostgresCredentialStorage: CredentialStorage, OutboxStorage, CredentialChangeFeed {
    /// The client the storage talks through.
    public let client: PostgresClient
    let sealer: Sealer
    let logger: Logger
    /// Names this storage object in its notifications, so that it can skip its own.
    let origin = UUID().uuidString
    /// The channel of change notifications.
    static let channel = "latchkey_changes"

    private init(client: PostgresClient, sealer: Sealer, logger: Logger) {
        self.client = client
        self.sealer = sealer
        self.logger = logger
    }

    /// Opens the store in the database `client` connects to: creates or migrates its tables
    /// (under a lock, so instances starting together do not race) and checks the key.
    ///
    /// - Parameters:
    ///   - client: a running client of the database.
    ///   - key: the 256-bit key the store's tokens are sealed with.
    ///   - logger: where diagnostics go; silent by default. Token values are never logged.
    ///   - timeout: how long to wait for the server before giving up with
    ///     ``StorageError/Code/unreachable`` (the client's pool would otherwise keep trying): a
    ///     minute by default, for a fleet whose database may start after it.
    /// - Throws: ``StorageError/Code/unreachable`` when the server cannot be reached,
    ///   ``StorageError/Code/wrongKey`` when `key` is not the store's key, and
    ///   ``StorageError/Code/unsupportedSchema`` when a newer Latchkey made the schema. Nothing is
    ///   changed in any of these cases.
    public static func open(
        client: PostgresClient, key: SymmetricKey, logger: Logger? = nil, timeout: Duration = .seconds(60)
    ) async throws(StorageError) -> PostgresCredentialStorage {
        guard key.bitCount == 256 else {
            throw StorageError(.invalidKeyFile, reason: "The key given is \(key.bitCount) bits; Latchkey needs 256.")
        }
        let logger = logger ?? .disabled("latchkey.postgres")
        let sealer = Sealer(key: key)
        let migrated = await withTaskGroup(of: Result<Bool, StorageError>?.self) { group in
            group.addTask {
                do throws(StorageError) {
                    try await PostgresSchema.migrate(client, sealer: sealer, logger: logger)
                    return .success(true)
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .success(false)
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .success(false)
        }
        switch migrated {
        case .success(true):
            return PostgresCredentialStorage(client: client, sealer: sealer, logger: logger)
        case .success(false):
            throw StorageError(
                .unreachable,
                reason:
                    "The PostgreSQL store could not be opened within \(timeout): the server did not answer, or refused the user, password or database. Nothing was changed."
            )
        case .failure(let error):
            throw error
        }
    }

    // MARK: Credentials

    static let credentialColumns = """
        id, subject, username, email, issuer, name, client_id, tags, metadata, sealed_token, created_at, updated_at, \
        version, access_token_expires_at, has_access_token, has_refresh_token
        """

    public func all() async throws(StorageError) -> [StoredCredential] {
        try await readCredentials(
            "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential ORDER BY created_at, position"
        ).credentials
    }

    /// A listing reads the columns in the clear only: neither the sealed tokens nor the sealed
    /// metadata cross the wire.
    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await rows(
            """
            SELECT id, subject, username, email, issuer, name, client_id, tags, created_at, access_token_expires_at,
                has_access_token, has_refresh_token
            FROM latchkey_credential ORDER BY created_at, position
            """
        ).compactMap { row in
            let columns = row.makeRandomAccess()
            guard let id = try? columns["id"].decode(String.self),
                let issuer = try? columns["issuer"].decode(String.self),
                let clientID = try? columns["client_id"].decode(String.self),
                let created = try? columns["created_at"].decode(Double.self)
            else { return nil }
            return AccountSummary(
                id: CredentialID(rawValue: id),
                metadata: CredentialMetadata(
                    subject: try? columns["subject"].decode(String?.self),
                    preferredUsername: try? columns["username"].decode(String?.self),
                    email: try? columns["email"].decode(String?.self), name: try? columns["name"].decode(String?.self),
                    issuer: issuer, clientID: clientID,
                    tags: SealedCredential.tags((try? columns["tags"].decode(String.self)) ?? "{}")),
                accessTokenExpiresAt: (try? columns["access_token_expires_at"].decode(Double?.self))?
                    .map(Date.init(timeIntervalSinceReferenceDate:)),
                hasAccessToken: (try? columns["has_access_token"].decode(Bool.self)) ?? false,
                hasRefreshToken: (try? columns["has_refresh_token"].decode(Bool.self)) ?? false,
                createdAt: Date(timeIntervalSinceReferenceDate: created))
        }
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        let read = try await readCredentials(
            "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential WHERE id = \(id.rawValue)")
        if let damaged = read.damaged.first {
            throw StorageError(.corruptRecord, reason: "The stored credential \(id) cannot be read: \(damaged.reason).")
        }
        return read.credentials.first
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        let filter: PostgresQuery
        switch query {
        case .subject(let value):
            filter = "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential WHERE subject = \(value)"
        case .username(let value):
            filter = "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential WHERE username = \(value)"
        case .email(let value):
            filter = "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential WHERE email = \(value)"
        case .issuer(let value):
            filter = "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential WHERE issuer = \(value)"
        }
        var ordered = filter
        ordered.sql += " ORDER BY created_at, position"
        return try await readCredentials(ordered).credentials
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        var first = credential
        first.version = 1
        let row = try SealedCredential(first, sealer: sealer)
        let id = credential.id
        try await transaction("adding a credential") { connection in
            let inserted = try await Self.count(
                connection.query(
                    """
                    INSERT INTO latchkey_credential (\(unescaped: Self.credentialColumns))
                    VALUES (\(row.id), \(row.subject), \(row.username), \(row.email), \(row.issuer), \(row.name),
                        \(row.clientID), \(row.tags), \(row.metadata), \(row.sealedToken), \(row.createdAt),
                        \(row.updatedAt), \(row.version), \(row.accessTokenExpiresAt), \(row.hasAccessToken),
                        \(row.hasRefreshToken))
                    ON CONFLICT (id) DO NOTHING RETURNING 1
                    """, logger: self.logger))
            guard inserted == 1 else { throw StorageError.duplicateCredential(id) }
            try await self.notify(.added(id), on: connection)
        }
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        var next = credential
        next.version += 1
        let row = try SealedCredential(next, sealer: sealer)
        try await transaction("updating a credential") { connection in
            let updated = try await Self.count(
                connection.query(
                    """
                    UPDATE latchkey_credential SET subject = \(row.subject), username = \(row.username),
                        email = \(row.email), issuer = \(row.issuer), name = \(row.name), client_id = \(row.clientID),
                        tags = \(row.tags), metadata = \(row.metadata), sealed_token = \(row.sealedToken),
                        created_at = \(row.createdAt), updated_at = \(row.updatedAt), version = \(row.version),
                        access_token_expires_at = \(row.accessTokenExpiresAt),
                        has_access_token = \(row.hasAccessToken), has_refresh_token = \(row.hasRefreshToken)
                    WHERE id = \(row.id) AND version = \(credential.version) RETURNING 1
                    """, logger: self.logger))
            guard updated == 1 else {
                let exists = try await Self.count(
                    connection.query(
                        "SELECT 1 FROM latchkey_credential WHERE id = \(row.id)", logger: self.logger))
                throw exists == 0 ? StorageError.credentialNotFound(credential.id) : .versionConflict(credential.id)
            }
            try await self.notify(.updated(credential.id), on: connection)
        }
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        try await transaction("removing a credential") { connection in
            let marker = try await self.lockedDefaultMarker(connection)
            let deleted = try await Self.count(
                connection.query(
                    "DELETE FROM latchkey_credential WHERE id = \(id.rawValue) RETURNING 1", logger: self.logger))
            guard deleted == 1 else { return StorageDeletion(deleted: false, clearedDefault: false) }
            try await self.notify(.removed(id), on: connection)
            guard marker == .some(id) else { return StorageDeletion(deleted: true, clearedDefault: false) }
            try await connection.query(
                "DELETE FROM latchkey_setting WHERE name = 'default_credential'", logger: self.logger)
            try await self.notify(.defaultChanged(nil), on: connection)
            return StorageDeletion(deleted: true, clearedDefault: true)
        }
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        switch try await defaultMarker() {
        case .none: return nil
        case .some(let id): return id
        case .damaged:
            throw StorageError(
                .corruptRecord, reason: "The default-account marker cannot be read; set the default again.")
        }
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        var marker: Data?
        if let id { marker = try sealer.seal(Data(id.rawValue.utf8), context: SealContext.defaultMarker) }
        let sealed = marker
        try await transaction("setting the default account") { connection in
            _ = try await self.lockedDefaultMarker(connection)
            if let id, let sealed {
                let exists = try await Self.count(
                    connection.query("SELECT 1 FROM latchkey_credential WHERE id = \(id.rawValue)", logger: self.logger)
                )
                guard exists == 1 else { throw StorageError.credentialNotFound(id) }
                try await connection.query(
                    """
                    INSERT INTO latchkey_setting (name, value) VALUES ('default_credential', \(sealed))
                    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
                    """, logger: self.logger)
            } else {
                try await connection.query(
                    "DELETE FROM latchkey_setting WHERE name = 'default_credential'", logger: self.logger)
            }
            try await self.notify(.defaultChanged(id), on: connection)
        }
    }

    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        var damaged = try await readCredentials(
            "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential ORDER BY created_at, position"
        ).damaged
        if try await defaultMarker() == .damaged {
            damaged.append(
                DamagedRecord(kind: .defaultMarker, id: "default", reason: "it does not open with the store's key"))
        }
        return damaged
    }

    // MARK: The refresh lease

    /// The lease is `pg_advisory_xact_lock` on a key derived from the credential's id, held by a
    /// transaction open around `body`: it ends with the transaction, or with the connection when
    /// the instance dies. A waiter asks again every second, so that it can give up when
    /// cancelled, and gives up with ``StorageError/Code/busy`` once it has waited `duration`
    /// (its holder is alive, so its work is not lost).
    public func withRefreshLease<Result: Sendable>(
        for id: CredentialID, duration: Duration, _ body: @Sendable () async -> Result
    ) async throws(StorageError) -> Result {
        let key = Self.leaseKey(id)
        let deadline = ContinuousClock.now.advanced(by: duration)
        while true {
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    try await connection.query("SET LOCAL lock_timeout = '1s'", logger: self.logger)
                    try await Self.advisoryLock(key, on: connection, logger: self.logger)
                    return await body()
                }
            } catch {
                let failure = Self.storageError(error, doing: "taking the refresh lease")
                guard failure.code == .busy, ContinuousClock.now < deadline else {
                    if failure.code == .busy {
                        throw StorageError(
                            .busy,
                            reason:
                                "The refresh lease of \(id) has been held elsewhere for longer than \(duration); nothing changed."
                        )
                    }
                    throw failure
                }
                logger.trace("refresh lease held elsewhere; waiting", metadata: ["credential": "\(id)"])
            }
        }
    }

    /// The advisory lock key of a credential's lease: 64 bits of a hash of its id.
    static func leaseKey(_ id: CredentialID) -> Int64 {
        let digest = SHA256.hash(data: Data("latchkey.refresh-lease:\(id.rawValue)".utf8))
        return digest.withUnsafeBytes { bytes in bytes.loadUnaligned(as: Int64.self) }
    }

    // MARK: The outbox

    static let outboxColumns = """
        id, issuer, client_id, kind, account, sealed_token, token_expires_at, created_at, attempts, next_attempt_at, \
        last_error, failed_permanently
        """

    /// The limit is checked under a transaction-scoped advisory lock, so that instances
    /// enqueueing at once cannot both take the last place.
    public func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        let row = try SealedOutboxEntry(entry, sealer: sealer)
        try await transaction("queueing a revocation") { connection in
            // The bound is kept under a lock of its own, so that instances queueing at once do
            // not both take the last place; without a bound there is nothing to keep.
            if limit < Int.max {
                try await Self.advisoryLock(Self.outboxLimitLock, on: connection, logger: self.logger)
            }
            let exists = try await Self.count(
                connection.query("SELECT 1 FROM latchkey_outbox WHERE id = \(row.id)", logger: self.logger))
            if exists == 0, limit < Int.max {
                var count = 0
                for try await total in try await connection.query(
                    "SELECT count(*) FROM latchkey_outbox", logger: self.logger
                ).decode(Int.self) {
                    count = total
                }
                guard count < limit else { throw StorageError.outboxFull(limit: limit) }
            }
            try await connection.query(
                """
                INSERT INTO latchkey_outbox (\(unescaped: Self.outboxColumns))
                VALUES (\(row.id), \(row.issuer), \(row.clientID), \(row.kind), \(row.account), \(row.sealedToken),
                    \(row.tokenExpiresAt), \(row.createdAt), \(row.attempts), \(row.nextAttemptAt), \(row.lastError),
                    \(row.failedPermanently))
                ON CONFLICT (id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
                    kind = EXCLUDED.kind, account = EXCLUDED.account, sealed_token = EXCLUDED.sealed_token,
                    token_expires_at = EXCLUDED.token_expires_at, created_at = EXCLUDED.created_at,
                    attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
                    last_error = EXCLUDED.last_error, failed_permanently = EXCLUDED.failed_permanently,
                    claimed_until = NULL
                """, logger: self.logger)
        }
    }

    static let outboxLimitLock: Int64 = 0x4C_4B_4F_75_74_62_6F_78  // "LKOutbox"

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox ORDER BY next_attempt_at, created_at"
        ).entries
    }

    /// `FOR UPDATE SKIP LOCKED`: instances claiming at the same moment each get other entries.
    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        let due = date.timeIntervalSinceReferenceDate
        let moment = now.timeIntervalSinceReferenceDate
        let until = moment + Double(duration.components.seconds)
        let claimed = try await readOutbox(
            """
            UPDATE latchkey_outbox SET claimed_until = \(until)
            WHERE id IN (
                SELECT id FROM latchkey_outbox
                WHERE failed_permanently = false AND next_attempt_at <= \(due)
                    AND (claimed_until IS NULL OR claimed_until <= \(moment))
                ORDER BY next_attempt_at, created_at
                LIMIT \(max(0, limit))
                FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.outboxColumns)
            """)
        return claimed.entries.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        let row = try SealedOutboxEntry(entry, sealer: sealer)
        try await execute(
            """
            UPDATE latchkey_outbox SET issuer = \(row.issuer), client_id = \(row.clientID), kind = \(row.kind),
                account = \(row.account), sealed_token = \(row.sealedToken), token_expires_at = \(row.tokenExpiresAt),
                created_at = \(row.createdAt), attempts = \(row.attempts), next_attempt_at = \(row.nextAttemptAt),
                last_error = \(row.lastError), failed_permanently = \(row.failedPermanently), claimed_until = NULL
            WHERE id = \(row.id)
            """, doing: "updating a queued revocation")
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        try await execute(
            "DELETE FROM latchkey_outbox WHERE id = \(id.uuidString)", doing: "removing a queued revocation")
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await readOutbox(
            "SELECT \(unescaped: Self.outboxColumns) FROM latchkey_outbox ORDER BY next_attempt_at, created_at"
        ).damaged
    }

    // MARK: Secrets beside the store

    /// Seals `secret` (a client secret, say) with the store's key, for `purpose`, as base64.
    public func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try sealer.seal(secret: secret, purpose: purpose)
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for `purpose`; `nil` when it does not open.
    public func open(sealedSecret: String, purpose: String) -> String? {
        sealer.open(sealedSecret: sealedSecret, purpose: purpose)
    }

    /// A document the application keeps beside the credentials (the command-line tool keeps its
    /// provider list so, for every instance to see), or `nil` when none is stored under `name`.
    /// Not sealed: seal its secrets with ``seal(secret:purpose:)``.
    public func document(named name: String) async throws(StorageError) -> Data? {
        var found: Data?
        for row in try await rows("SELECT value FROM latchkey_setting WHERE name = \("document:" + name)") {
            found = try? row.decode(Data.self)
        }
        return found
    }

    /// Stores `data` as the document `name`, replacing the one there.
    public func setDocument(_ data: Data, named name: String) async throws(StorageError) {
        try await execute(
            """
            INSERT INTO latchkey_setting (name, value) VALUES (\("document:" + name), \(data))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """, doing: "storing a document")
    }
}
