import Foundation
import Logging

/// What sending one outbox entry came to.
enum OutboxDelivery: Sendable {
    /// The step went through (or no longer applies): the entry goes.
    case done
    /// The step failed; `changed` is the entry with what the attempt sealed into it meanwhile
    /// (a refresh token the provider rotated), to keep.
    case failed(ProviderError, changed: OutboxEntry?)
}

extension OutboxEntry.FailureCause {
    /// The cause of `error`: no provider, a refusal a retry cannot fix, or a failure for now.
    init(_ error: ProviderError) {
        if error.code == .noProviderRegistered {
            self = .noProvider
        } else {
            self = error.isRetryable ? .unavailable : .refused
        }
    }
}

extension CredentialStore {
    /// Sends one entry's step to its provider, under the claim that holds it.
    nonisolated func deliver(
        _ entry: OutboxEntry, to provider: (any IdentityProvider)?, through claim: any ClaimedOutboxEntries
    ) async -> OutboxDelivery {
        guard let provider else {
            return .failed(
                ProviderError(.noProviderRegistered, reason: "No provider is registered for \(entry.provider)."),
                changed: nil)
        }
        do throws(ProviderError) {
            switch entry.payload {
            case .grant(let grant) where entry.action == .globalSignOut:
                return try await signOutGlobally(entry, grant: grant, at: provider, through: claim)
            case .grant(let grant) where entry.action == .endSession:
                if try await provider.endSession(idToken: grant.idToken) != nil {
                    logger.debug(
                        "the provider wants a browser to end its session; nothing more can be sent",
                        metadata: ["entry": "\(entry.id)"])
                }
                return .done
            case .token(let value):
                guard let kind = entry.action.revokedKind else { throw .unknownOutboxStep }
                try await provider.revoke(value, kind: kind)
                return .done
            default:
                throw .unknownOutboxStep
            }
        } catch {
            return .failed(error, changed: nil)
        }
    }

    /// A queued global sign-out: with the entry's access token while it is valid, else with one
    /// its refresh token gets. The rotated refresh token is sealed into the entry, under the
    /// claim, before the new access token is used, so a failure after it loses nothing.
    private nonisolated func signOutGlobally(
        _ entry: OutboxEntry, grant: OutboxGrant, at provider: any IdentityProvider,
        through claim: any ClaimedOutboxEntries
    ) async throws(ProviderError) -> OutboxDelivery {
        guard try await provider.supportsGlobalSignOut() else {
            logger.debug(
                "the provider has no global sign-out; the revocations queued with it stand in",
                metadata: ["entry": "\(entry.id)"])
            return .done
        }
        let current = grant.token(of: entry.provider, issuedAt: now())
        if grant.accessToken != nil, grant.accessTokenExpiresAt.map({ $0 > now() }) ?? true {
            do {
                try await provider.globalSignOut(for: current)
                return .done
            } catch  where error.rejectedAccessToken && grant.refreshToken != nil {
                logger.debug("the queued access token was rejected; refreshing", metadata: ["entry": "\(entry.id)"])
            }
        }
        guard grant.refreshToken != nil else {
            throw ProviderError(
                .signInRequired, endpoint: .globalSignOut,
                reason:
                    "The queued global sign-out has no valid access token and no refresh token to get one; sign in and sign out everywhere again."
            )
        }
        try await provider.prepareRefresh(of: current)
        // From the refresh request until its answer is sealed into the entry: work that must finish.
        let (answer, changed, storageFailure) = try await UninterruptibleWork.run {
            () async throws(ProviderError) -> (RefreshAnswer, OutboxEntry, StorageError?) in
            let answer: RefreshAnswer
            do throws(ProviderError) {
                answer = try await provider.exchangeRefreshToken(of: current)
            } catch  where error.requiresSignIn {
                throw ProviderError(
                    .signInRequired, endpoint: .token,
                    reason:
                        "The queued global sign-out's refresh token was rejected, so no access token can be got to send it with; sign in and sign out everywhere again.",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status)
            }
            var changed = entry
            let answered = grant.answered(by: answer)
            changed.payload = .grant(answered)
            await queueRevocation(ofRotated: answered.refreshToken, replacing: grant.refreshToken, after: entry)
            do throws(StorageError) {
                try await claim.settle(removing: [], updating: [changed])
                return (answer, changed, nil)
            } catch {
                return (answer, changed, error)
            }
        }
        if let storageFailure { return .failed(.storage(storageFailure), changed: changed) }
        let fresh: Token
        switch answer {
        case .token(let token):
            fresh = token
        case .refused(var refusal, _):
            // The rotated refresh token is sealed into the entry (the only live one): the grant
            // is alive, so a later attempt may still send the step.
            refusal.retryableByProvider = true
            return .failed(refusal, changed: changed)
        }
        guard fresh.accessToken != nil else {
            return .failed(
                ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no access token."),
                changed: changed)
        }
        do throws(ProviderError) {
            try await provider.globalSignOut(for: fresh)
            return .done
        } catch {
            return .failed(error, changed: changed)
        }
    }
}

extension CredentialStore {
    /// Queues the revocation of the refresh token a queued global sign-out's refresh rotated
    /// (`rotated`, when it is not `previous`), to go after that sign-out (`entry`): the
    /// revocations queued with the sign-out hold the token it started with, and should the
    /// sign-out fail for good, the grant must end all the same. Queued before the rotated token
    /// is sealed into the entry, so that an interruption between the two leaves a revocation
    /// too many (of a grant ended by then: nothing), never one too few. A revocation that
    /// cannot be queued is logged; the sign-out goes on.
    fileprivate nonisolated func queueRevocation(
        ofRotated rotated: String?, replacing previous: String?, after entry: OutboxEntry
    ) async {
        guard let rotated, rotated != previous else { return }
        let date = now()
        let revocation = OutboxEntry(
            provider: entry.provider, action: .revoke(.refreshToken), payload: .token(rotated), account: entry.account,
            tokenExpiresAt: nil, createdAt: date, attempts: 0, nextAttemptAt: date, lastError: nil,
            waitsFor: entry.id)
        do {
            try await outbox.enqueue([revocation], limit: outboxLimit)
        } catch {
            logger.warning(
                "the revocation of a refresh token a queued global sign-out rotated could not be queued",
                metadata: ["entry": "\(entry.id)", "error": "\(error)"])
        }
    }
}

extension ProviderError {
    /// An entry whose action and payload do not go together (a newer Latchkey's, say).
    static let unknownOutboxStep = ProviderError(
        .unsupported, reason: "The outbox entry's step is not one Latchkey knows.")
}
