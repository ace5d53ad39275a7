package import Foundation

/// What a sign-out plan is told, and what it asks the executor to do.
extension SignOutPlan {
    /// What the credential holds, as far as the plan cares.
    package struct Tokens: Sendable, Hashable {
        /// Whether it has an access token.
        package var hasAccessToken: Bool
        /// Whether that access token is still valid.
        package var accessTokenValid: Bool
        /// Whether it has a refresh token.
        package var hasRefreshToken: Bool
        /// The kinds it holds that a sign-out revokes (or, for a session token, logs out), in
        /// order: access token, refresh token, device secret, session token.
        package var revocable: [TokenKind]

        /// The facts of `token` at `date`.
        package init(_ token: Token, at date: Date) {
            hasAccessToken = token.accessToken != nil
            accessTokenValid = token.accessToken != nil && !token.isExpired(at: date)
            hasRefreshToken = token.refreshToken != nil
            revocable = [.accessToken, .refreshToken, .deviceSecret, .sessionToken].filter {
                !token.values(of: $0).isEmpty
            }
        }

        /// Facts given one by one (for tests).
        package init(hasAccessToken: Bool, accessTokenValid: Bool, hasRefreshToken: Bool, revocable: [TokenKind]) {
            self.hasAccessToken = hasAccessToken
            self.accessTokenValid = accessTokenValid
            self.hasRefreshToken = hasRefreshToken
            self.revocable = revocable
        }
    }

    /// Whether the provider has a global sign-out.
    package enum GlobalSupport: Sendable {
        case supported
        case unsupported
        /// Could not be found out (the provider's metadata could not be fetched).
        case unknown(ProviderError)
    }

    /// What the executor does next; it hands the step's outcome back to the method named.
    package enum Action: Sendable {
        /// Refresh the access token (in the transaction), then call ``refreshed(_:)``.
        case refresh
        /// Send the global sign-out with the current access token, then call ``signedOutGlobally(_:)``.
        case globalSignOut
        /// Revoke these kinds and end the provider session when asked, all at once, then call
        /// ``revoked(_:endSession:)``.
        case revokeAndEndSession(revoke: [TokenKind], endSession: Bool)
        /// Run the hook at this index, then call ``ranHook(_:error:)``.
        case runHook(Int)
        /// Queue these steps in the outbox, then call ``queued(_:)``.
        case queue([QueuedStep])
        /// Keep the account, dropping the tokens that were revoked (by value), then call ``kept(_:)``.
        case keep(droppingRevoked: Set<TokenKind>)
        /// Remove the account from this device, then call ``removed(_:)``.
        case remove
        /// The account's sign-out is over.
        case finish(AccountSignOut)
    }

    /// A step to queue: its action in the outbox, and whether it waits for the account's global
    /// sign-out queued with it.
    package struct QueuedStep: Sendable, Hashable {
        package var action: OutboxEntry.Action
        package var waitsForGlobalSignOut: Bool
        /// Why it failed, for the entry's ``OutboxEntry/lastError``.
        package var lastError: String?
        /// How long the provider asked to wait.
        package var retryAfter: Duration?
        /// The step failed in a way a retry cannot fix (a 403, say): it is queued as failed for
        /// good, kept and shown, and sent again only when asked.
        package var failedForGood = false
    }
}
