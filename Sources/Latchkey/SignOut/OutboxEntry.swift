public import Foundation

/// A revocation that failed and waits in the revocation outbox to be tried again.
///
/// The token it holds is sealed at rest like the store's tokens and is never handed out as a
/// credential: the only thing Latchkey does with it is send it to the revocation endpoint.
/// `description` never shows it.
public struct OutboxEntry: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The entry's identifier.
    public let id: UUID
    /// The provider that issued the token.
    public var provider: ProviderIdentity
    /// The kind of token.
    public var kind: TokenKind
    /// The token to revoke. Package-only: nothing outside Latchkey can read it back.
    package var token: String
    /// The account it belonged to, for reports.
    public var account: String?
    /// When the token expires anyway, as the provider stated it; after that the entry is
    /// dropped. `nil` when nobody said: the entry stays until it is revoked or dropped on purpose.
    public var tokenExpiresAt: Date?
    /// When the revocation was first attempted.
    public var createdAt: Date
    /// Attempts so far.
    public var attempts: Int
    /// When the next attempt is due.
    public var nextAttemptAt: Date
    /// Why the last attempt failed.
    public var lastError: String?
    /// Whether the last failure was one a retry cannot fix (the provider refused the client or
    /// the token type, or no provider is registered): the entry is no longer tried, and stays
    /// listed, with ``lastError``, until it is dropped on purpose.
    public var failedPermanently: Bool

    /// Creates an entry. Only Latchkey's own code and storage backends create entries.
    package init(
        id: UUID = UUID(), provider: ProviderIdentity, kind: TokenKind, token: String, account: String?,
        tokenExpiresAt: Date?, createdAt: Date, attempts: Int, nextAttemptAt: Date, lastError: String?,
        failedPermanently: Bool = false
    ) {
        self.id = id
        self.provider = provider
        self.kind = kind
        self.token = token
        self.account = account
        self.tokenExpiresAt = tokenExpiresAt
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.failedPermanently = failedPermanently
    }

    public var description: String {
        let state = failedPermanently ? "failed permanently" : "next: \(nextAttemptAt.formatted(.iso8601))"
        return "OutboxEntry(\(kind) of \(account ?? "unknown") at \(provider), attempts: \(attempts), \(state))"
    }
}

extension OutboxEntry: CustomDebugStringConvertible, CustomReflectable {
    /// Same as `description`: the token is never shown.
    public var debugDescription: String { description }

    /// A mirror without the token, so `dump(entry)` cannot print it either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "provider": provider, "kind": kind, "account": account as Any,
                "tokenExpiresAt": tokenExpiresAt as Any, "createdAt": createdAt, "attempts": attempts,
                "nextAttemptAt": nextAttemptAt, "lastError": lastError as Any, "failedPermanently": failedPermanently,
            ],
            displayStyle: .struct)
    }
}
