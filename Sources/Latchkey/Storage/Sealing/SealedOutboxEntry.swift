package import Foundation

/// An outbox entry as a backend keeps it: its payload sealed, bound to its id, provider and action.
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
    /// ``OutboxEntry/FailureCause/rawValue``.
    package var failureCause: String?
    package var failedPermanently: Bool
    package var waitsFor: String?

    package init(
        id: String, issuer: String, clientID: String, kind: String, account: String?, sealedToken: Data,
        tokenExpiresAt: Double?, createdAt: Double, attempts: Int, nextAttemptAt: Double, lastError: String?,
        failureCause: String? = nil, failedPermanently: Bool, waitsFor: String? = nil
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
        self.failureCause = failureCause
        self.failedPermanently = failedPermanently
        self.waitsFor = waitsFor
    }

    /// The record of `entry`, its payload sealed: a revocation's token as it is, a grant as the
    /// JSON of ``OutboxGrant`` (the form entries of earlier versions have).
    package init(_ entry: OutboxEntry, sealer: Sealer) throws(StorageError) {
        let id = entry.id.uuidString
        let kind = entry.action.rawValue
        let plaintext: String =
            switch entry.payload {
            case .token(let value): value
            case .grant(let grant): grant.sealedText
            }
        self.init(
            id: id, issuer: entry.provider.issuer, clientID: entry.provider.clientID, kind: kind,
            account: entry.account,
            sealedToken: try sealer.seal(
                Data(plaintext.utf8),
                context: SealContext.outbox(
                    id, issuer: entry.provider.issuer, clientID: entry.provider.clientID, kind: kind)),
            tokenExpiresAt: entry.tokenExpiresAt?.timeIntervalSinceReferenceDate,
            createdAt: entry.createdAt.timeIntervalSinceReferenceDate, attempts: entry.attempts,
            nextAttemptAt: entry.nextAttemptAt.timeIntervalSinceReferenceDate, lastError: entry.lastError,
            failureCause: entry.failureCause?.rawValue, failedPermanently: entry.failedPermanently,
            waitsFor: entry.waitsFor?.uuidString)
    }

    /// The entry, or why the record cannot be read: a seal that does not open, an action
    /// Latchkey does not know, or a grant that is not one.
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
        let text = String(decoding: plaintext, as: UTF8.self)
        let payload: OutboxEntry.Payload
        if action.revokedKind != nil {
            payload = .token(text)
        } else if let grant = OutboxGrant(sealedText: text) {
            payload = .grant(grant)
        } else {
            return .failure(
                DamagedRecord(kind: .outboxEntry, id: id, reason: "its sealed tokens are not a grant Latchkey can read")
            )
        }
        return .success(
            OutboxEntry(
                id: uuid, provider: ProviderIdentity(issuer: issuer, clientID: clientID), action: action,
                payload: payload, account: account,
                tokenExpiresAt: tokenExpiresAt.map(Date.init(timeIntervalSinceReferenceDate:)),
                createdAt: Date(timeIntervalSinceReferenceDate: createdAt), attempts: attempts,
                nextAttemptAt: Date(timeIntervalSinceReferenceDate: nextAttemptAt), lastError: lastError,
                failureCause: failureCause.map(OutboxEntry.FailureCause.init(rawValue:)),
                failedPermanently: failedPermanently, waitsFor: waitsFor.flatMap(UUID.init(uuidString:))))
    }
}
