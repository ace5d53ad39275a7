public import Foundation
public import Latchkey
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The credentials, the default marker and their notifications. Every write is written once,
/// on a connection: the storage's own methods run it on a connection of the pool, a lease
/// holder's access on the connection that holds the lease.
extension PostgresCredentialStorage {
    static let credentialColumns = """
        id, subject, username, email, issuer, name, client_id, tags, metadata, sealed_token, created_at, updated_at, \
        version, access_token_expires_at, has_access_token, has_refresh_token, needs_sign_in, rejected_access_token
        """

    private static let oldestFirst = "ORDER BY created_at, position"

    public func all() async throws(StorageError) -> [StoredCredential] {
        try await readCredentials(
            "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential \(unescaped: Self.oldestFirst)"
        ).values
    }

    /// A listing reads the columns in the clear only: neither the sealed tokens nor the sealed
    /// metadata cross the wire.
    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await rows(
            """
            SELECT id, subject, username, email, issuer, name, client_id, tags, created_at, access_token_expires_at,
                has_access_token, has_refresh_token, needs_sign_in
            FROM latchkey_credential \(unescaped: Self.oldestFirst)
            """
        ).compactMap { row in
            let columns = row.makeRandomAccess()
            guard let id = try? columns["id"].decode(String.self),
                let issuer = try? columns["issuer"].decode(String.self),
                let clientID = try? columns["client_id"].decode(String.self),
                let created = try? columns["created_at"].decode(Double.self)
            else { return nil }
            return SealedCredential(
                id: id, subject: try? columns["subject"].decode(String?.self),
                username: try? columns["username"].decode(String?.self),
                email: try? columns["email"].decode(String?.self), issuer: issuer,
                name: try? columns["name"].decode(String?.self), clientID: clientID,
                tags: (try? columns["tags"].decode(String.self)) ?? "{}", metadata: "", sealedToken: Data(),
                createdAt: created, updatedAt: 0, version: 0,
                accessTokenExpiresAt: (try? columns["access_token_expires_at"].decode(Double?.self)) ?? nil,
                hasAccessToken: (try? columns["has_access_token"].decode(Bool.self)) ?? false,
                hasRefreshToken: (try? columns["has_refresh_token"].decode(Bool.self)) ?? false,
                needsSignIn: (try? columns["needs_sign_in"].decode(Bool.self)) ?? false
            ).summary()
        }
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        try Self.single(id, try await readCredentials(Self.selectCredential(id)))
    }

    /// `accessToken()`'s hot path: from memory while the change log says nothing changed
    /// (``PostgresReadCache``: at most a second stale for a change made on another instance,
    /// never for one made here), else a read, which is kept.
    public func validAccessToken(for id: CredentialID, minimumValidity: TimeInterval, at date: Date)
        async throws(StorageError) -> String?
    {
        let now = ContinuousClock.now
        let (token, epoch) = readCache.withLockedValue {
            ($0.accessToken(id, minimumValidity: minimumValidity, at: date, now: now), $0.epoch)
        }
        if let token { return token }
        startLogReader()
        guard let credential = try await credential(for: id) else {
            readCache.withLockedValue { $0.forget(id) }
            return nil
        }
        readCache.withLockedValue { $0.keep(credential, readAt: epoch) }
        return credential.accessToken(minimumValidity: minimumValidity, at: date)
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        let select = "SELECT \(Self.credentialColumns) FROM latchkey_credential"
        let filter: PostgresQuery
        switch query {
        case .subject(let value):
            filter = "\(unescaped: select) WHERE subject = \(value) \(unescaped: Self.oldestFirst)"
        case .username(let value):
            filter = "\(unescaped: select) WHERE username = \(value) \(unescaped: Self.oldestFirst)"
        case .email(let value):
            filter = "\(unescaped: select) WHERE email = \(value) \(unescaped: Self.oldestFirst)"
        case .issuer(let value):
            filter = "\(unescaped: select) WHERE issuer = \(value) \(unescaped: Self.oldestFirst)"
        }
        return try await readCredentials(filter).values
    }

    public func credentials(ids: [CredentialID]) async throws(StorageError) -> [StoredCredential] {
        let select = "SELECT \(Self.credentialColumns) FROM latchkey_credential"
        let values = ids.map(\.rawValue)
        let read = try await readCredentials("\(unescaped: select) WHERE id = ANY(\(values))")
        if let damaged = read.damaged.first {
            throw StorageError(
                .corruptRecord, reason: "The stored credential \(damaged.id) cannot be read: \(damaged.reason).")
        }
        return read.values.inOrder(of: ids)
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        var first = credential
        first.version = 1
        let row = try SealedCredential(first, sealer: sealer)
        let id = credential.id
        try await credentialTransaction("adding a credential") { connection in
            let inserted = try await Self.count(
                connection.query(
                    """
                    INSERT INTO latchkey_credential (\(unescaped: Self.credentialColumns))
                    VALUES (\(row.id), \(row.subject), \(row.username), \(row.email), \(row.issuer), \(row.name),
                        \(row.clientID), \(row.tags), \(row.metadata), \(row.sealedToken), \(row.createdAt),
                        \(row.updatedAt), \(row.version), \(row.accessTokenExpiresAt), \(row.hasAccessToken),
                        \(row.hasRefreshToken), \(row.needsSignIn), \(row.rejectedAccessToken))
                    ON CONFLICT (id) DO NOTHING RETURNING 1
                    """, logger: self.logger))
            guard inserted == 1 else { throw StorageError.duplicateCredential(id) }
            try await self.notify(.added(id), on: connection)
        }
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        try await credentialTransaction("updating a credential") { connection in
            try await self.update(credential, on: connection)
        }
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        try await credentialTransaction("removing a credential") { connection in
            try await self.delete(id, on: connection)
        }
    }

    public func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try await credentialTransaction("removing a credential") { connection in
            try await self.delete(id, ifVersion: version, on: connection)
        }
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        try await defaultMarker().credentialID()
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        let sealed = try id.map { id throws(StorageError) in try DefaultMarker.seal(id, with: sealer) }
        try await transaction("setting the default account") { connection in
            _ = try await self.lockedDefaultMarker(connection)
            if let id, let sealed {
                let exists = try await Self.count(
                    connection.query("SELECT 1 FROM latchkey_credential WHERE id = \(id.rawValue)", logger: self.logger)
                )
                guard exists == 1 else { throw StorageError.credentialNotFound(id) }
                try await connection.query(
                    """
                    INSERT INTO latchkey_setting (name, value) VALUES (\(DefaultMarker.settingName), \(sealed))
                    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
                    """, logger: self.logger)
            } else {
                try await connection.query(
                    "DELETE FROM latchkey_setting WHERE name = \(DefaultMarker.settingName)", logger: self.logger)
            }
            try await self.notify(.defaultChanged(id), on: connection)
        }
    }

    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        var damaged = try await readCredentials(
            "SELECT \(unescaped: Self.credentialColumns) FROM latchkey_credential \(unescaped: Self.oldestFirst)"
        ).damaged
        if try await defaultMarker() == .damaged { damaged.append(DefaultMarker.damagedRecord) }
        return damaged
    }

    // MARK: On a connection

    static func selectCredential(_ id: CredentialID) -> PostgresQuery {
        "SELECT \(unescaped: credentialColumns) FROM latchkey_credential WHERE id = \(id.rawValue)"
    }

    /// The one credential a read by id found; its damaged record is an error.
    static func single(_ id: CredentialID, _ read: (values: [StoredCredential], damaged: [DamagedRecord]))
        throws(StorageError) -> StoredCredential?
    {
        if let damaged = read.damaged.first {
            throw StorageError(.corruptRecord, reason: "The stored credential \(id) cannot be read: \(damaged.reason).")
        }
        return read.values.first
    }

    /// The statement that writes every column of `row`, only over the version `expected` when
    /// one is given; it answers one row when it wrote.
    static func updateQuery(_ row: SealedCredential, where expected: Int?) throws -> PostgresQuery {
        try """
        UPDATE latchkey_credential SET subject = \(row.subject), username = \(row.username),
            email = \(row.email), issuer = \(row.issuer), name = \(row.name), client_id = \(row.clientID),
            tags = \(row.tags), metadata = \(row.metadata), sealed_token = \(row.sealedToken),
            created_at = \(row.createdAt), updated_at = \(row.updatedAt), version = \(row.version),
            access_token_expires_at = \(row.accessTokenExpiresAt), has_access_token = \(row.hasAccessToken),
            has_refresh_token = \(row.hasRefreshToken), needs_sign_in = \(row.needsSignIn),
            rejected_access_token = \(row.rejectedAccessToken)
        WHERE id = \(row.id) AND (\(expected)::bigint IS NULL OR version = \(expected)::bigint)
        RETURNING 1
        """
    }

    /// Writes `credential` over the version it names (compare-and-swap), in the transaction of
    /// `connection`.
    func update(_ credential: StoredCredential, on connection: PostgresConnection) async throws {
        var next = credential
        next.version += 1
        let row = try SealedCredential(next, sealer: sealer)
        let updated = try await Self.count(
            connection.query(try Self.updateQuery(row, where: credential.version), logger: logger))
        guard updated == 1 else {
            let exists = try await Self.count(
                connection.query("SELECT 1 FROM latchkey_credential WHERE id = \(row.id)", logger: logger))
            throw exists == 0 ? StorageError.credentialNotFound(credential.id) : .versionConflict(credential.id)
        }
        try await notify(.updated(credential.id), on: connection)
    }

    /// Deletes a credential and clears the default if it pointed to it, in the transaction of
    /// `connection`.
    func delete(_ id: CredentialID, on connection: PostgresConnection) async throws -> StorageDeletion {
        try await delete(id, ifVersion: nil, on: connection) ?? .notFound
    }

    /// Deletes a credential when it still has `version` (any, when `nil`), and clears the default
    /// if it pointed to it, in the transaction of `connection`; `nil` when it has another version.
    func delete(_ id: CredentialID, ifVersion version: Int?, on connection: PostgresConnection) async throws
        -> StorageDeletion?
    {
        let marker = try await lockedDefaultMarker(connection)
        let deleted =
            if let version {
                try await Self.count(
                    connection.query(
                        "DELETE FROM latchkey_credential WHERE id = \(id.rawValue) AND version = \(version) RETURNING 1",
                        logger: logger))
            } else {
                try await Self.count(
                    connection.query(
                        "DELETE FROM latchkey_credential WHERE id = \(id.rawValue) RETURNING 1", logger: logger))
            }
        guard deleted == 1 else {
            guard version != nil else { return .notFound }
            let exists = try await Self.count(
                connection.query("SELECT 1 FROM latchkey_credential WHERE id = \(id.rawValue)", logger: logger))
            return exists == 0 ? .notFound : nil
        }
        try await notify(.removed(id), on: connection)
        guard marker == .some(id) else { return .deletedCredential }
        try await connection.query(
            "DELETE FROM latchkey_setting WHERE name = \(DefaultMarker.settingName)", logger: logger)
        try await notify(.defaultChanged(nil), on: connection)
        return .deletedDefault
    }
}
