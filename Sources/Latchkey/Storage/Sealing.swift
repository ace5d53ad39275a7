package import Crypto
package import Foundation

/// AES-GCM sealing of the secret parts of stored records, for Latchkey's storage backends.
///
/// Each sealed box is bound to the record it belongs to through the associated data, so a
/// sealed token copied into another row does not open there.
package struct Sealer: Sendable {
    package let key: SymmetricKey

    package init(key: SymmetricKey) {
        self.key = key
    }

    /// Seals a secret that lives outside the store (a client secret in a configuration file,
    /// say) for `purpose`, as base64 text.
    package func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try seal(Data(secret.utf8), context: "latchkey.secret:\(purpose)").base64EncodedString()
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for the same purpose; `nil` when it does not
    /// open (another key, another purpose, or altered).
    package func open(sealedSecret: String, purpose: String) -> String? {
        guard let data = Data(base64Encoded: sealedSecret),
            let plaintext = open(data, context: "latchkey.secret:\(purpose)")
        else { return nil }
        return String(decoding: plaintext, as: UTF8.self)
    }

    /// Seals `plaintext` for the record named by `context`.
    package func seal(_ plaintext: Data, context: String) throws(StorageError) -> Data {
        do {
            guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: Data(context.utf8)).combined
            else {
                throw StorageError(.databaseFailure, reason: "AES-GCM produced no combined box.")
            }
            return combined
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.databaseFailure, reason: "A record could not be sealed.", underlying: error)
        }
    }

    /// Opens a box sealed for `context`; `nil` when the key or the context is not the one it was
    /// sealed with, or the box was altered.
    package func open(_ sealed: Data, context: String) -> Data? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return nil }
        return try? AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
    }

    /// The known value whose sealed form tells, on opening, whether a key is the store's key.
    package static let keyCheckPlaintext = Data("latchkey key check v1".utf8)
    package static let keyCheckContext = "latchkey.key-check"
}

/// What each sealed box is bound to: its AES-GCM associated data. Everything that routes a token
/// or names its account is in there, so an edited row does not open (and is reported as damaged)
/// instead of handing one account's token to another.
package enum SealContext {
    /// A credential's tokens are bound to its id and to its metadata exactly as stored (subject,
    /// username, email, name, issuer, client, tags).
    package static func credential(_ id: String, metadata: String) -> String {
        "latchkey.credential:\(id)\n\(metadata)"
    }

    /// An outbox entry's token is bound to its id, provider and kind.
    package static func outbox(_ id: String, issuer: String, clientID: String, kind: String) -> String {
        "latchkey.outbox:\(id)\n\(issuer)\n\(clientID)\n\(kind)"
    }

    /// The default-account marker is sealed on its own.
    package static let defaultMarker = "latchkey.default"

    /// Before the SQLite schema's version 4, only the ids were bound.
    package static func legacyCredential(_ id: String) -> String { "latchkey.credential:\(id)" }
    package static func legacyOutbox(_ id: String) -> String { "latchkey.outbox:\(id)" }
}

/// A credential as a backend keeps it: its tokens sealed, and in the clear what indexes and
/// listings read (copies of the sealed-in metadata, which must match it or the record is
/// damaged). Dates are seconds since the reference date, which a `Double` column keeps exactly.
package struct SealedCredential: Sendable, Hashable {
    package var id: String
    package var subject: String?
    package var username: String?
    package var email: String?
    package var issuer: String
    package var name: String?
    package var clientID: String
    package var tags: String
    package var metadata: String
    package var sealedToken: Data
    package var createdAt: Double
    package var updatedAt: Double
    package var version: Int
    package var accessTokenExpiresAt: Double?
    package var hasAccessToken: Bool
    package var hasRefreshToken: Bool

    package init(
        id: String, subject: String?, username: String?, email: String?, issuer: String, name: String?,
        clientID: String, tags: String, metadata: String, sealedToken: Data, createdAt: Double, updatedAt: Double,
        version: Int, accessTokenExpiresAt: Double?, hasAccessToken: Bool, hasRefreshToken: Bool
    ) {
        self.id = id
        self.subject = subject
        self.username = username
        self.email = email
        self.issuer = issuer
        self.name = name
        self.clientID = clientID
        self.tags = tags
        self.metadata = metadata
        self.sealedToken = sealedToken
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.hasAccessToken = hasAccessToken
        self.hasRefreshToken = hasRefreshToken
    }

    /// The record of `credential`, its tokens sealed.
    package init(_ credential: StoredCredential, sealer: Sealer) throws(StorageError) {
        let metadata: String
        let token: Data
        do {
            metadata = String(decoding: try Self.encoder.encode(credential.metadata), as: UTF8.self)
            token = try JSONEncoder().encode(credential.token)
        } catch {
            throw StorageError(
                .databaseFailure, reason: "The credential \(credential.id) could not be encoded.", underlying: error)
        }
        let id = credential.id.rawValue
        self.init(
            id: id, subject: credential.metadata.subject, username: credential.metadata.preferredUsername,
            email: credential.metadata.email, issuer: credential.metadata.issuer, name: credential.metadata.name,
            clientID: credential.metadata.clientID, tags: Self.tagsText(credential.metadata.tags), metadata: metadata,
            sealedToken: try sealer.seal(token, context: SealContext.credential(id, metadata: metadata)),
            createdAt: credential.createdAt.timeIntervalSinceReferenceDate,
            updatedAt: credential.updatedAt.timeIntervalSinceReferenceDate, version: credential.version,
            accessTokenExpiresAt: credential.token.accessToken == nil
                ? nil : credential.token.expiresAt?.timeIntervalSinceReferenceDate,
            hasAccessToken: credential.token.accessToken != nil, hasRefreshToken: credential.token.refreshToken != nil)
    }

    /// Tags as listed: `{}` when there are none, which a listing does not decode.
    package static func tagsText(_ tags: [String: String]) -> String {
        guard !tags.isEmpty, let data = try? encoder.encode(tags) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Sorted keys, so the sealed metadata text is the same for the same metadata.
    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// The summary a listing shows, from the clear fields only.
    /// The tags column: a JSON object of strings (`{}` when there are none).
    package static func tags(_ json: String) -> [String: String] {
        json == "{}" ? [:] : (try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))) ?? [:]
    }

    package func summary() -> AccountSummary {
        AccountSummary(
            id: CredentialID(rawValue: id),
            metadata: CredentialMetadata(
                subject: subject, preferredUsername: username, email: email, name: name, issuer: issuer,
                clientID: clientID, tags: Self.tags(tags)),
            accessTokenExpiresAt: accessTokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
            hasAccessToken: hasAccessToken, hasRefreshToken: hasRefreshToken,
            createdAt: Date(timeIntervalSinceReferenceDate: createdAt))
    }

    /// The credential, or why the record cannot be read.
    package func open(with sealer: Sealer) -> Result<StoredCredential, DamagedRecord> {
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
            issuer == metadata.issuer, name == metadata.name, clientID == metadata.clientID,
            tags == Self.tagsText(metadata.tags)
        else { return damaged("its indexed fields do not match its sealed metadata (altered)") }
        return .success(
            StoredCredential(
                id: CredentialID(rawValue: id), token: token, metadata: metadata,
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt),
                updatedAt: Date(timeIntervalSinceReferenceDate: updatedAt), version: version))
    }
}

/// An outbox entry as a backend keeps it: its token sealed, bound to its id, provider and kind.
package struct SealedOutboxEntry: Sendable, Hashable {
    package var id: String
    package var issuer: String
    package var clientID: String
    package var kind: String
    package var account: String?
    package var sealedToken: Data
    package var tokenExpiresAt: Double?
    package var createdAt: Double
    package var attempts: Int
    package var nextAttemptAt: Double
    package var lastError: String?
    package var failedPermanently: Bool

    package init(
        id: String, issuer: String, clientID: String, kind: String, account: String?, sealedToken: Data,
        tokenExpiresAt: Double?, createdAt: Double, attempts: Int, nextAttemptAt: Double, lastError: String?,
        failedPermanently: Bool
    ) {
        self.id = id
        self.issuer = issuer
        self.clientID = clientID
        self.kind = kind
        self.account = account
        self.sealedToken = sealedToken
        self.tokenExpiresAt = tokenExpiresAt
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.failedPermanently = failedPermanently
    }

    /// The record of `entry`, its token sealed.
    package init(_ entry: OutboxEntry, sealer: Sealer) throws(StorageError) {
        let id = entry.id.uuidString
        let kind = entry.kind.rawValue
        self.init(
            id: id, issuer: entry.provider.issuer, clientID: entry.provider.clientID, kind: kind,
            account: entry.account,
            sealedToken: try sealer.seal(
                Data(entry.token.utf8),
                context: SealContext.outbox(
                    id, issuer: entry.provider.issuer, clientID: entry.provider.clientID, kind: kind)),
            tokenExpiresAt: entry.tokenExpiresAt?.timeIntervalSinceReferenceDate,
            createdAt: entry.createdAt.timeIntervalSinceReferenceDate, attempts: entry.attempts,
            nextAttemptAt: entry.nextAttemptAt.timeIntervalSinceReferenceDate, lastError: entry.lastError,
            failedPermanently: entry.failedPermanently)
    }

    /// The entry, or why the record cannot be read.
    package func open(with sealer: Sealer) -> Result<OutboxEntry, DamagedRecord> {
        guard let uuid = UUID(uuidString: id), let tokenKind = TokenKind(rawValue: kind),
            let plaintext = sealer.open(
                sealedToken, context: SealContext.outbox(id, issuer: issuer, clientID: clientID, kind: kind))
        else {
            return .failure(
                DamagedRecord(
                    kind: .outboxEntry, id: id,
                    reason: "its sealed token does not open with the store's key and its provider (altered or damaged)"
                ))
        }
        return .success(
            OutboxEntry(
                id: uuid, provider: ProviderIdentity(issuer: issuer, clientID: clientID), kind: tokenKind,
                token: String(decoding: plaintext, as: UTF8.self), account: account,
                tokenExpiresAt: tokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt), attempts: attempts,
                nextAttemptAt: Date(timeIntervalSinceReferenceDate: nextAttemptAt), lastError: lastError,
                failedPermanently: failedPermanently))
    }
}
