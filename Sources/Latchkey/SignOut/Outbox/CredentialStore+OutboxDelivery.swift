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

extension OutboxEntry {
    /// The start of the error of an entry that failed for want of a registered provider: such an
    /// entry is tried again once its provider is registered.
    static let noProviderReason = "No provider is registered"
}

extension CredentialStore {
    /// Sends one entry's step to its provider.
    nonisolated func deliver(_ entry: OutboxEntry, to provider: (any IdentityProvider)?) async -> OutboxDelivery {
        guard let provider else {
            return .failed(
                ProviderError(.unsupported, reason: "\(OutboxEntry.noProviderReason) for \(entry.provider)."),
                changed: nil)
        }
        do throws(ProviderError) {
            switch entry.action {
            case .globalSignOut:
                return try await signOutGlobally(entry, at: provider)
            case .endSession:
                let url = try await provider.endSession(idToken: OutboxGrant(sealedText: entry.token)?.idToken)
                if url != nil {
                    logger.debug(
                        "the provider wants a browser to end its session; nothing more can be sent",
                        metadata: ["entry": "\(entry.id)"])
                }
                return .done
            default:
                guard let kind = entry.action.revokedKind else {
                    throw ProviderError(.unsupported, reason: "The outbox entry's step is not one Latchkey knows.")
                }
                try await provider.revoke(entry.token, kind: kind)
                return .done
            }
        } catch {
            return .failed(error, changed: nil)
        }
    }

    /// A queued global sign-out: with the entry's access token while it is valid, else with one
    /// its refresh token gets. The rotated refresh token is sealed into the entry before the new
    /// access token is used, so a failure after it loses nothing.
    private nonisolated func signOutGlobally(_ entry: OutboxEntry, at provider: any IdentityProvider)
        async throws(ProviderError) -> OutboxDelivery
    {
        guard let grant = OutboxGrant(sealedText: entry.token) else {
            throw ProviderError(.invalidResponse, reason: "The queued global sign-out holds no tokens to send it with.")
        }
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
        let (fresh, changed, storageFailure) = try await UninterruptibleWork.run {
            () async throws(ProviderError) -> (Token, OutboxEntry, StorageError?) in
            let fresh: Token
            do throws(ProviderError) {
                fresh = try await provider.exchangeRefreshToken(of: current)
            } catch  where error.requiresSignIn {
                throw ProviderError(
                    .signInRequired, endpoint: .token,
                    reason:
                        "The queued global sign-out's refresh token was rejected, so no access token can be got to send it with; sign in and sign out everywhere again.",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status)
            }
            var changed = entry
            changed.token = OutboxGrant(fresh).sealedText
            do throws(StorageError) {
                try await outbox.updateOutboxEntry(changed)
                return (fresh, changed, nil)
            } catch {
                return (fresh, changed, error)
            }
        }
        if let storageFailure { return .failed(.storage(storageFailure), changed: changed) }
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
