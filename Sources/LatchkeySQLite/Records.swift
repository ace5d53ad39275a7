import Foundation
import GRDB
import Latchkey

/// What each sealed box is bound to: its AES-GCM associated data. Everything that routes a token
/// or names its account is in there, so an edited row does not open (and is reported as damaged)
/// instead of handing one account's token to another.
enum SealContext {
    /// A credential's tokens are bound to its id and to its metadata exactly as stored (subject,
    /// username, email, name, issuer, client, tags).
    static func credential(_ id: String, metadata: String) -> String { "latchkey.credential:\(id)\n\(metadata)" }

    /// An outbox entry's token is bound to its id, provider and kind.
    static func outbox(_ id: String, issuer: String, clientID: String, kind: String) -> String {
        "latchkey.outbox:\(id)\n\(issuer)\n\(clientID)\n\(kind)"
    }

    /// The default-account marker is sealed on its own.
    static let defaultMarker = "latchkey.default"

    /// Before schema version 4, only the ids were bound.
    static func legacyCredential(_ id: String) -> String { "latchkey.credential:\(id)" }
    static func legacyOutbox(_ id: String) -> String { "latchkey.outbox:\(id)" }
}

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
        let metadata: String
        let token: Data
        do {
            metadata = String(decoding: try Self.encoder.encode(credential.metadata), as: UTF8.self)
            token = try JSONEncoder().encode(credential.token)
        } catch {
            throw StorageError(
                .databaseFailure, reason: "The credential \(credential.id) could not be encoded.", underlying: error)
        }
        id = credential.id.rawValue
        subject = credential.metadata.subject
        username = credential.metadata.preferredUsername
        email = credential.metadata.email
        issuer = credential.metadata.issuer
        name = credential.metadata.name
        clientId = credential.metadata.clientID
        tags = Self.tagsText(credential.metadata.tags)
        accessTokenExpiresAt =
            credential.token.accessToken == nil ? nil : credential.token.expiresAt?.timeIntervalSinceReferenceDate
        hasAccessToken = credential.token.accessToken != nil
        hasRefreshToken = credential.token.refreshToken != nil
        self.metadata = metadata
        sealedToken = try sealer.seal(token, context: SealContext.credential(id, metadata: metadata))
        createdAt = credential.createdAt.timeIntervalSinceReferenceDate
        updatedAt = credential.updatedAt.timeIntervalSinceReferenceDate
        version = credential.version
    }

    /// Tags as listed: `{}` when there are none, which a listing does not decode.
    static func tagsText(_ tags: [String: String]) -> String {
        guard !tags.isEmpty, let data = try? encoder.encode(tags) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The summary a listing shows, from the columns only.
    func summary() -> AccountSummary {
        let tags: [String: String] =
            self.tags == "{}"
            ? [:] : (try? JSONDecoder().decode([String: String].self, from: Data(self.tags.utf8))) ?? [:]
        return AccountSummary(
            id: CredentialID(rawValue: id),
            metadata: CredentialMetadata(
                subject: subject, preferredUsername: username, email: email, name: name, issuer: issuer,
                clientID: clientId, tags: tags),
            accessTokenExpiresAt: accessTokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
            hasAccessToken: hasAccessToken, hasRefreshToken: hasRefreshToken,
            createdAt: Date(timeIntervalSinceReferenceDate: createdAt))
    }

    /// Sorted keys, so the sealed metadata text is the same for the same metadata.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// The credential, or why the row cannot be read.
    func open(with sealer: Sealer) -> Result<StoredCredential, DamagedRecord> {
        func damaged(_ reason: String) -> Result<StoredCredential, DamagedRecord> {
            .failure(DamagedRecord(kind: .credential, id: id, reason: reason))
        }
        guard let metadata = try? JSONDecoder().decode(CredentialMetadata.self, from: Data(self.metadata.utf8)) else {
            return damaged("its metadata is not valid")
        }
        guard let plaintext = sealer.open(sealedToken, context: SealContext.credential(id, metadata: self.metadata))
        else {
            return damaged("its sealed tokens do not open with the store's key and its metadata (altered or damaged)")
        }
        guard let token = try? JSONDecoder().decode(Token.self, from: plaintext) else {
            return damaged("its sealed tokens are not valid")
        }
        guard subject == metadata.subject, username == metadata.preferredUsername, email == metadata.email,
            issuer == metadata.issuer, name == metadata.name, clientId == metadata.clientID,
            tags == Self.tagsText(metadata.tags)
        else { return damaged("its indexed fields do not match its sealed metadata (altered)") }
        return .success(
            StoredCredential(
                id: CredentialID(rawValue: id), token: token, metadata: metadata,
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt),
                updatedAt: Date(timeIntervalSinceReferenceDate: updatedAt), version: version))
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

    /// The row of `entry`, its token sealed.
    init(_ entry: OutboxEntry, sealer: Sealer) throws(StorageError) {
        id = entry.id.uuidString
        issuer = entry.provider.issuer
        clientId = entry.provider.clientID
        kind = entry.kind.rawValue
        account = entry.account
        sealedToken = try sealer.seal(
            Data(entry.token.utf8), context: SealContext.outbox(id, issuer: issuer, clientID: clientId, kind: kind))
        tokenExpiresAt = entry.tokenExpiresAt?.timeIntervalSinceReferenceDate
        createdAt = entry.createdAt.timeIntervalSinceReferenceDate
        attempts = entry.attempts
        nextAttemptAt = entry.nextAttemptAt.timeIntervalSinceReferenceDate
        lastError = entry.lastError
        failedPermanently = entry.failedPermanently
    }

    /// The entry, or why the row cannot be read.
    func open(with sealer: Sealer) -> Result<OutboxEntry, DamagedRecord> {
        guard let uuid = UUID(uuidString: id), let tokenKind = TokenKind(rawValue: kind),
            let plaintext = sealer.open(
                sealedToken, context: SealContext.outbox(id, issuer: issuer, clientID: clientId, kind: kind))
        else {
            return .failure(
                DamagedRecord(
                    kind: .outboxEntry, id: id,
                    reason: "its sealed token does not open with the store's key and its provider (altered or damaged)"
                ))
        }
        return .success(
            OutboxEntry(
                id: uuid, provider: ProviderIdentity(issuer: issuer, clientID: clientId), kind: tokenKind,
                token: String(decoding: plaintext, as: UTF8.self), account: account,
                tokenExpiresAt: tokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt), attempts: attempts,
                nextAttemptAt: Date(timeIntervalSinceReferenceDate: nextAttemptAt), lastError: lastError,
                failedPermanently: failedPermanently))
    }
}

extension Row {
    /// The `id` column as text, for reporting a row that does not decode.
    var idText: String { (self["id"] as String?) ?? "(no id)" }
}
