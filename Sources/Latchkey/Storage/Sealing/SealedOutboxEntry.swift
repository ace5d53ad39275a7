package import Foundation

/// An outbox entry as a backend keeps it: its secret sealed, bound to its id, provider and action.
package struct SealedOutboxEntry: Sendable, Hashable {
    package var id: String
    package var issuer: String
    package var clientID: String
    /// The action's stored name (``OutboxEntry/Action/rawValue``).
    package var kind: String
    package var account: String?
    package var sealedToken: Data
    package var tokenExpiresAt: Double?
    package var createdAt: Double
    package var attempts: Int
    package var nextAttemptAt: Double
    package var lastError: String?
    package var failedPermanently: Bool
    package var waitsFor: String?

    package init(
        id: String, issuer: String, clientID: String, kind: String, account: String?, sealedToken: Data,
        tokenExpiresAt: Double?, createdAt: Double, attempts: Int, nextAttemptAt: Double, lastError: String?,
        failedPermanently: Bool, waitsFor: String? = nil
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
        self.waitsFor = waitsFor
    }

    /// The record of `entry`, its secret sealed.
    package init(_ entry: OutboxEntry, sealer: Sealer) throws(StorageError) {
        let id = entry.id.uuidString
        let kind = entry.action.rawValue
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
            failedPermanently: entry.failedPermanently, waitsFor: entry.waitsFor?.uuidString)
    }

    /// The entry, or why the record cannot be read.
    package func open(with sealer: Sealer) -> Result<OutboxEntry, DamagedRecord> {
        guard let uuid = UUID(uuidString: id), let action = OutboxEntry.Action(rawValue: kind),
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
                id: uuid, provider: ProviderIdentity(issuer: issuer, clientID: clientID), action: action,
                token: String(decoding: plaintext, as: UTF8.self), account: account,
                tokenExpiresAt: tokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt), attempts: attempts,
                nextAttemptAt: Date(timeIntervalSinceReferenceDate: nextAttemptAt), lastError: lastError,
                failedPermanently: failedPermanently, waitsFor: waitsFor.flatMap(UUID.init(uuidString:))))
    }
}
