import Foundation
import Logging

extension CredentialStore {
    /// Stores the tokens of a sign-in. The account that signs in again — the same issuer, client
    /// and subject — keeps its place: its stored tokens are replaced in its transaction, its id,
    /// tags (`tags` merged over them) and default stay, what Latchkey knew against it (a needed
    /// sign-in) is cleared, and its old grant is ended (``retire(_:replacedBy:account:provider:)``).
    /// Anyone else is a new account, made the default when `makeDefault` or when there is none.
    ///
    /// When the tokens cannot be stored, nothing would hold the grant the provider just issued:
    /// it is ended the same way before the error is thrown.
    ///
    /// With `separate`, the sign-in is always a new credential: a web app's sessions each keep
    /// their own grant, so that one browser signing out leaves the user's others alone.
    package func storeSignIn(
        _ token: Token, accountClaims: [String: JSONValue]?, tags: [String: String], makeDefault: Bool,
        provider: any IdentityProvider, separate: Bool = false
    ) async throws(StorageError) -> StoredCredential {
        let stored: StoredCredential
        let old: Token?
        do {
            if separate {
                (stored, old) = (try await insert(token, accountClaims: accountClaims, tags: tags), nil)
            } else {
                (stored, old) = try await write(token, accountClaims: accountClaims, tags: tags)
            }
        } catch {
            await retire(token, replacedBy: nil, account: nil, provider: provider)
            throw error
        }
        if let old {
            logger.debug("an account signed in again; its tokens replaced", metadata: ["credential": "\(stored.id)"])
            await retire(old, replacedBy: token, account: stored.metadata.displayName, provider: provider)
        }
        try await self.makeDefault(stored.id, always: makeDefault)
        return stored
    }

    /// Writes a sign-in's tokens over those of the same account, or as a new credential.
    /// - Returns: what is stored, and the tokens it replaced.
    private func write(_ token: Token, accountClaims: [String: JSONValue]?, tags: [String: String])
        async throws(StorageError) -> (StoredCredential, Token?)
    {
        try Self.checkTags(tags)
        var metadata = CredentialMetadata(token: token, tags: tags)
        if token.idToken == nil, let accountClaims { metadata.read(accountClaims) }
        let same = try await accounts().first { account in
            metadata.subject != nil && account.metadata.subject == metadata.subject
                && account.metadata.issuer == metadata.issuer && account.metadata.clientID == metadata.clientID
        }
        if let same {
            let replaced = try await transaction(same.id) {
                transaction async throws(StorageError) -> (StoredCredential, Token?)? in
                guard let old = try await transaction.credential() else { return nil }
                let stored = try await transaction.update { credential in
                    credential.replaceToken(with: token)
                    if token.idToken == nil, let accountClaims { credential.metadata.read(accountClaims) }
                    credential.metadata.tags.merge(tags) { _, new in new }
                    credential.state = CredentialState()
                }
                return (stored, old.token)
            }
            // Removed while the sign-in was under way, the account is new again.
            if let replaced { return replaced }
        }
        return (try await insert(token, accountClaims: accountClaims, tags: tags), nil)
    }

    /// Ends the grant of `old`, tokens a new sign-in replaced: its refresh token (or, without
    /// one, its access token) is revoked when the new sign-in did not keep it. A revocation that
    /// fails for a reason a retry can fix is queued in the outbox; one the provider refuses for
    /// good is logged. The new tokens are stored before this runs: nothing here can lose them.
    package func retire(
        _ old: Token, replacedBy new: Token?, account: String?, provider: any IdentityProvider
    ) async {
        let kind: TokenKind
        if let refreshToken = old.refreshToken {
            guard refreshToken != new?.refreshToken else { return }
            kind = .refreshToken
        } else if let accessToken = old.accessToken, accessToken != new?.accessToken {
            kind = .accessToken
        } else {
            return
        }
        let outcomes = await capabilities.sharing { await RevocationFanOut.revoke([kind], of: old, at: provider) }
        guard case .failed(let error)? = outcomes[kind] else { return }
        guard error.isRetryable, let value = old.value(of: kind) else {
            logger.notice(
                "a grant that was replaced could not be revoked",
                metadata: ["kind": "\(kind)", "error": "\(error)"])
            return
        }
        let now = now()
        let entry = OutboxEntry(
            provider: old.provider, action: .revoke(kind), payload: .token(value), account: account,
            tokenExpiresAt: old.expiry(of: kind), createdAt: now, attempts: 1,
            nextAttemptAt: now.addingTimeInterval(
                OutboxBackoff.default.delay(afterAttempts: 1, retryAfter: error.retryAfter)),
            lastError: error.description, failureCause: OutboxEntry.FailureCause(error))
        do {
            try await outbox.enqueue([entry], limit: outboxLimit)
        } catch {
            logger.error(
                "a grant that was replaced could not be revoked or queued",
                metadata: ["kind": "\(kind)", "error": "\(error)"])
        }
    }
}
