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

    /// What the executor does next; it hands the step's outcome back to the event named.
    package enum Action: Sendable {
        /// Refresh the access token (in the transaction), then ``refreshed(_:)``.
        case refresh
        /// Send the global sign-out with the current access token, then ``signedOutGlobally(_:)``.
        case globalSignOut
        /// Revoke these kinds and end the provider session when asked, all at once, then
        /// ``revoked(_:endSession:)``.
        case revokeAndEndSession(revoke: [TokenKind], endSession: Bool)
        /// Queue these entries in the outbox in one write, then ``queued(_:)``.
        case queue([OutboxEntry])
        /// Keep the account, dropping the tokens that were revoked (by value), then ``kept(_:)``.
        case keep(droppingRevoked: Set<TokenKind>)
        /// Remove the account from this device, then ``removed(_:)``.
        case remove
        /// Leave the credential's transaction (its lease is released), then ``transactionEnded()``.
        case endTransaction
        /// Run the hook at this index, outside the lease, then ``ranHook(_:error:)``.
        case runHook(Int)
        /// The account's sign-out is over.
        case finish(AccountSignOut)
    }

    /// When the entries a plan queues are made: their date (their creation, and the start of
    /// their backoff), the jitter of that backoff, and their identifiers. Fixed by tests.
    package struct Queueing: Sendable {
        package var date: Date
        package var jitter: Double
        package var makeID: @Sendable () -> UUID

        package init(
            date: Date, jitter: Double = Double.random(in: 0.5...1), makeID: @escaping @Sendable () -> UUID = { UUID() }
        ) {
            self.date = date
            self.jitter = jitter
            self.makeID = makeID
        }
    }

    /// An event the plan did not ask for: the executor and the plan disagree, which is a defect.
    /// Nothing is recorded for it.
    package struct OutOfOrder: Error, Sendable, CustomStringConvertible {
        package var event: String
        package var state: String

        package var description: String { "the sign-out plan was told \(event) while \(state)" }
    }
}
