#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// A credential as a backend keeps it: its tokens sealed, and in the clear what indexes and
/// listings read (copies of the sealed-in metadata, which must match it or the record is
/// damaged) and Latchkey's own state (bound into the seal). Dates are seconds since the
/// reference date, which a `Double` column keeps exactly.
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
    package var needsSignIn: Bool
    package var rejectedAccessToken: String?

    package init(
        id: String, subject: String?, username: String?, email: String?, issuer: String, name: String?,
        clientID: String, tags: String, metadata: String, sealedToken: Data, createdAt: Double, updatedAt: Double,
        version: Int, accessTokenExpiresAt: Double?, hasAccessToken: Bool, hasRefreshToken: Bool,
        needsSignIn: Bool = false, rejectedAccessToken: String? = nil
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
        self.needsSignIn = needsSignIn
        self.rejectedAccessToken = rejectedAccessToken
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
            sealedToken: try sealer.seal(
                token,
                context: SealContext.credential(
                    id, metadata: metadata, state: credential.state, version: credential.version)),
            createdAt: credential.createdAt.timeIntervalSinceReferenceDate,
            updatedAt: credential.updatedAt.timeIntervalSinceReferenceDate, version: credential.version,
            accessTokenExpiresAt: credential.token.accessToken == nil
                ? nil : credential.token.expiresAt?.timeIntervalSinceReferenceDate,
            hasAccessToken: credential.token.accessToken != nil, hasRefreshToken: credential.token.refreshToken != nil,
            needsSignIn: credential.state.needsSignIn, rejectedAccessToken: credential.state.rejectedAccessToken)
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

    /// The tags column: a JSON object of strings (`{}` when there are none).
    package static func tags(_ json: String) -> [String: String] {
        json == "{}" ? [:] : (try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))) ?? [:]
    }

    /// The summary a listing shows, from the clear fields only.
    package func summary() -> AccountSummary {
        AccountSummary(
            id: CredentialID(rawValue: id),
            metadata: CredentialMetadata(
                subject: subject, preferredUsername: username, email: email, name: name, issuer: issuer,
                clientID: clientID, tags: Self.tags(tags)),
            accessTokenExpiresAt: accessTokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
            hasAccessToken: hasAccessToken, hasRefreshToken: hasRefreshToken,
            createdAt: Date(timeIntervalSinceReferenceDate: createdAt), needsSignIn: needsSignIn)
    }

    /// The credential's state as its columns say.
    package var state: CredentialState {
        CredentialState(needsSignIn: needsSignIn, rejectedAccessToken: rejectedAccessToken)
    }

    /// The credential, or why the record cannot be read. `versionBound: false` opens a record
    /// sealed before its version was bound (schema upgrades only).
    package func open(with sealer: Sealer, versionBound: Bool = true) -> Result<StoredCredential, DamagedRecord> {
        func damaged(_ reason: String) -> Result<StoredCredential, DamagedRecord> {
            .failure(DamagedRecord(kind: .credential, id: id, reason: reason))
        }
        guard let metadata = try? JSONDecoder().decode(CredentialMetadata.self, from: Data(self.metadata.utf8)) else {
            return damaged("its metadata is not valid")
        }
        let context = SealContext.credential(
            id, metadata: self.metadata, state: state, version: versionBound ? version : nil)
        guard let plaintext = sealer.open(sealedToken, context: context) else {
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
                id: CredentialID(rawValue: id), token: token, metadata: metadata, state: state,
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt),
                updatedAt: Date(timeIntervalSinceReferenceDate: updatedAt), version: version))
    }

    /// The record sealed again with its version bound, for the schema upgrade that binds it;
    /// `nil` when it is bound already, or does not open (it stays as it is, reported as damaged).
    package func bindingVersion(with sealer: Sealer) throws(StorageError) -> SealedCredential? {
        if case .success = open(with: sealer) { return nil }
        guard case .success(let credential) = open(with: sealer, versionBound: false) else { return nil }
        return try SealedCredential(credential, sealer: sealer)
    }

    /// The tags versions before the state columns kept Latchkey's state in.
    package static let legacyStateTags = (
        needsSignIn: "latchkey.needs-sign-in", rejected: "latchkey.rejected-access-token"
    )

    /// The record with the state earlier versions kept in its tags moved into the state's own
    /// fields, sealed again (its metadata changes), for the schema upgrade that made the columns;
    /// `nil` when it keeps no state in its tags, or does not open (it stays as it is, reported as
    /// damaged).
    package func movingStateOutOfTags(with sealer: Sealer) throws(StorageError) -> SealedCredential? {
        guard case .success(var credential) = open(with: sealer, versionBound: false) else { return nil }
        let tags = credential.metadata.tags
        let legacy = Self.legacyStateTags
        guard tags[legacy.needsSignIn] != nil || tags[legacy.rejected] != nil else { return nil }
        credential.state = CredentialState(
            needsSignIn: tags[legacy.needsSignIn] != nil, rejectedAccessToken: tags[legacy.rejected])
        credential.metadata.tags[legacy.needsSignIn] = nil
        credential.metadata.tags[legacy.rejected] = nil
        return try SealedCredential(credential, sealer: sealer)
    }
}
