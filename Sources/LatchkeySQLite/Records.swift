import Foundation
import GRDB
import Latchkey

/// A row of `credential`.
struct CredentialRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "credential"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var id: String
    /// `subject`, `username`, `email`, `issuer`, `name`, `clientId` and `tags` are copies of the
    /// sealed metadata's, in the clear for the indexes and for listing; they must match it, or
    /// the row is damaged.
    var subject: String?
    var username: String?
    var email: String?
    var issuer: String
    var name: String?
    var clientId: String
    var tags: String
    var metadata: String
    var sealedToken: Data
    var createdAt: Double
    var updatedAt: Double
    var version: Int
    /// What a listing shows of the tokens, without their values.
    var accessTokenExpiresAt: Double?
    var hasAccessToken: Bool
    var hasRefreshToken: Bool

    /// The row of `credential`, its token sealed.
    init(_ credential: StoredCredential, sealer: Sealer) throws(StorageError) {
        self.init(try SealedCredential(credential, sealer: sealer))
    }

    init(_ sealed: SealedCredential) {
        id = sealed.id
        subject = sealed.subject
        username = sealed.username
        email = sealed.email
        issuer = sealed.issuer
        name = sealed.name
        clientId = sealed.clientID
        tags = sealed.tags
        metadata = sealed.metadata
        sealedToken = sealed.sealedToken
        createdAt = sealed.createdAt
        updatedAt = sealed.updatedAt
        version = sealed.version
        accessTokenExpiresAt = sealed.accessTokenExpiresAt
        hasAccessToken = sealed.hasAccessToken
        hasRefreshToken = sealed.hasRefreshToken
    }

    /// The row as the backends share it.
    var sealed: SealedCredential {
        SealedCredential(
            id: id, subject: subject, username: username, email: email, issuer: issuer, name: name, clientID: clientId,
            tags: tags, metadata: metadata, sealedToken: sealedToken, createdAt: createdAt, updatedAt: updatedAt,
            version: version, accessTokenExpiresAt: accessTokenExpiresAt, hasAccessToken: hasAccessToken,
            hasRefreshToken: hasRefreshToken)
    }

    /// The credential, or why the row cannot be read.
    func open(with sealer: Sealer) -> Result<StoredCredential, DamagedRecord> { sealed.open(with: sealer) }
}

/// What a listing reads of a `credential` row: the columns in the clear, neither the sealed
/// tokens nor the sealed metadata, decoded without Codable (a listing reads every row).
struct AccountRecord: FetchableRecord, TableRecord {
    static let databaseTableName = "credential"
    static var databaseSelection: [any SQLSelectable] {
        [
            Column("id"), Column("subject"), Column("username"), Column("email"), Column("issuer"), Column("name"),
            Column("client_id"), Column("tags"), Column("created_at"), Column("access_token_expires_at"),
            Column("has_access_token"), Column("has_refresh_token"),
        ]
    }

    let summary: AccountSummary

    init(row: Row) throws {
        let tags: String = try row.decode(forColumn: "tags")
        summary = AccountSummary(
            id: CredentialID(rawValue: try row.decode(forColumn: "id")),
            metadata: CredentialMetadata(
                subject: try row.decode(forColumn: "subject"), preferredUsername: try row.decode(forColumn: "username"),
                email: try row.decode(forColumn: "email"), name: try row.decode(forColumn: "name"),
                issuer: try row.decode(forColumn: "issuer"), clientID: try row.decode(forColumn: "client_id"),
                tags: SealedCredential.tags(tags)),
            accessTokenExpiresAt: (try row.decode(Double?.self, forColumn: "access_token_expires_at"))
                .map(Date.init(timeIntervalSinceReferenceDate:)),
            hasAccessToken: try row.decode(forColumn: "has_access_token"),
            hasRefreshToken: try row.decode(forColumn: "has_refresh_token"),
            createdAt: Date(timeIntervalSinceReferenceDate: try row.decode(forColumn: "created_at")))
    }
}

/// A row of `outbox`.
struct OutboxRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "outbox"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var id: String
    var issuer: String
    var clientId: String
    var kind: String
    var account: String?
    var sealedToken: Data
    var tokenExpiresAt: Double?
    var createdAt: Double
    var attempts: Int
    var nextAttemptAt: Double
    var lastError: String?
    var failedPermanently: Bool
    /// Until when a drainer holds the entry (see `OutboxStorage.claimOutboxEntries`); a write of
    /// the record ends the claim.
    var claimedUntil: Double?

    /// The row of `entry`, its token sealed.
    init(_ entry: OutboxEntry, sealer: Sealer) throws(StorageError) {
        let sealed = try SealedOutboxEntry(entry, sealer: sealer)
        id = sealed.id
        issuer = sealed.issuer
        clientId = sealed.clientID
        kind = sealed.kind
        account = sealed.account
        sealedToken = sealed.sealedToken
        tokenExpiresAt = sealed.tokenExpiresAt
        createdAt = sealed.createdAt
        attempts = sealed.attempts
        nextAttemptAt = sealed.nextAttemptAt
        lastError = sealed.lastError
        failedPermanently = sealed.failedPermanently
    }

    /// The entry, or why the row cannot be read.
    func open(with sealer: Sealer) -> Result<OutboxEntry, DamagedRecord> {
        SealedOutboxEntry(
            id: id, issuer: issuer, clientID: clientId, kind: kind, account: account, sealedToken: sealedToken,
            tokenExpiresAt: tokenExpiresAt, createdAt: createdAt, attempts: attempts, nextAttemptAt: nextAttemptAt,
            lastError: lastError, failedPermanently: failedPermanently
        ).open(with: sealer)
    }
}

extension Row {
    /// The `id` column as text, for reporting a row that does not decode.
    var idText: String { (self["id"] as String?) ?? "(no id)" }
}
