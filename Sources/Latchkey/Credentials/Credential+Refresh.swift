public import Foundation
import Logging
import Tracing

extension Credential {
    /// An access token valid for at least `minimumValidity` seconds, refreshed first when needed.
    ///
    /// Concurrent callers share one refresh: the callers of this handle, and every process or
    /// machine that shares the store (through the credential's lease). The new tokens are stored
    /// as soon as the provider answers. A rejected refresh token throws
    /// ``ProviderError/Code/signInRequired`` and deletes nothing; network failures are
    /// retryable and delete nothing.
    ///
    /// For tokens that live less than twice `minimumValidity`, half their lifetime is used
    /// instead, so a provider's short-lived tokens are not refreshed on every call.
    ///
    /// When a refresh brings an ID token that fails verification, the new access and refresh
    /// tokens are kept and the access token is returned; the failure is logged, and
    /// ``refresh()`` throws it.
    public nonisolated func accessToken(minimumValidity: TimeInterval = 60) async throws(ProviderError) -> String {
        // The hot path: the storage answers from what it keeps, without a copy of the record.
        let date = now()
        do {
            if let token = try await store.storage.validAccessToken(
                for: id, minimumValidity: minimumValidity, at: date)
            {
                return token
            }
        } catch {
            throw .storage(error)
        }
        let current = try await stored()
        if let accessToken = current.accessToken(minimumValidity: minimumValidity, at: date) { return accessToken }
        return try await usableToken(minimumValidity: minimumValidity, current: current).accessToken
    }

    /// The tokens with an access token valid for at least `minimumValidity` seconds (refreshed
    /// first when needed), and that access token: what a request needs to carry it, a DPoP
    /// proof included. Nonisolated, as every read of the handle is: a valid token is handed
    /// out on the caller's own executor, with no hop.
    nonisolated func usableToken(minimumValidity: TimeInterval = 60, current: StoredCredential? = nil)
        async throws(ProviderError) -> (token: Token, accessToken: String)
    {
        let current = if let current { current } else { try await stored() }
        if let accessToken = current.accessToken(minimumValidity: minimumValidity, at: now()) {
            return (current.token, accessToken)
        }
        // Known already: the key is gone and the grant was ended; nothing to send.
        if current.state.needsSignIn, current.token.dpop?.isKeyAvailable == false { throw .dpopKeyUnavailable }
        let refreshed = try await sharedRefresh(.accessToken(minimumValidity), of: current.token).get()
        guard let accessToken = refreshed.token.accessToken else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no access token.")
        }
        return (refreshed.token, accessToken)
    }

    /// An ID token valid for at least `minimumValidity` seconds: the stored one, or one from a
    /// refresh (shared, like ``accessToken(minimumValidity:)``'s, by every caller and process),
    /// verified before it is stored. For a Kubernetes exec credential plugin, say, where the ID
    /// token is the bearer token.
    ///
    /// - Throws: ``ProviderError/Code/signInRequired`` when the refresh token was rejected, and
    ///   ``ProviderError/Code/invalidResponse`` when a refresh brings no ID token.
    public func idToken(minimumValidity: TimeInterval = 60) async throws(ProviderError) -> String {
        let current = try await stored()
        if let idToken = current.idToken(minimumValidity: minimumValidity, at: now()) { return idToken }
        let refreshed = try await sharedRefresh(.idToken(minimumValidity), of: current.token).get()
        if let failure = refreshed.idTokenFailure { throw failure }
        guard let idToken = refreshed.token.idToken, let expiry = refreshed.token.idTokenExpiresAt, expiry > now()
        else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no new ID token.")
        }
        return idToken
    }

    /// An access token valid for at least `seconds`, exactly: unlike
    /// ``accessToken(minimumValidity:)``, there is no cap at half the token's lifetime (what a
    /// user who asks for a token that lasts an hour means). When the provider's tokens live
    /// shorter, the token of one refresh is returned: callers that ask at once, in this process
    /// or others, share that refresh instead of each refreshing in turn.
    public func accessToken(validFor seconds: TimeInterval) async throws(ProviderError) -> String {
        let current = try await stored()
        if let accessToken = current.accessToken(validFor: seconds, at: now()) { return accessToken }
        let seen = current.token.accessToken.map(StoredCredential.fingerprint)
        let refreshed = try await sharedRefresh(.accessTokenFor(seconds, seen: seen), of: current.token).get()
        guard let accessToken = refreshed.token.accessToken else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no access token.")
        }
        return accessToken
    }

    /// Refreshes now unless the access token is no longer `accessToken` (another caller or
    /// process refreshed since it was read), and returns the stored tokens: a forced refresh
    /// that callers asking at once make once.
    @discardableResult
    public func refresh(replacing accessToken: String?) async throws(ProviderError) -> Token {
        let seen = accessToken.map(StoredCredential.fingerprint)
        let refreshed = try await sharedRefresh(.newAccessToken(seen: seen), of: try await stored().token).get()
        if let failure = refreshed.idTokenFailure { throw failure }
        return refreshed.token
    }

    /// Refreshes now, whatever the access token's expiry, and returns the stored tokens.
    ///
    /// Throws ``ProviderError/Code/idTokenRejected`` when the new ID token fails verification;
    /// the new access and refresh tokens are stored all the same (the spent refresh token is
    /// never fallen back to).
    @discardableResult
    public func refresh() async throws(ProviderError) -> Token {
        let refreshed = try await sharedRefresh(.always, of: try await stored().token).get()
        if let failure = refreshed.idTokenFailure { throw failure }
        return refreshed.token
    }

    /// The refresh of every caller of this handle: one in flight at a time, in the credential's
    /// transaction (where another process's refresh is waited for and then found).
    func sharedRefresh(_ need: RefreshNeed, of token: Token) async -> Result<Refreshed, ProviderError> {
        let (result, joined) = await refreshes.run { [self] in
            let started = ContinuousClock.now
            let result = await withSpan(LatchkeyTelemetry.SpanName.refresh) { span in
                let result = await self.performRefresh(need, preparing: token)
                if case .failure(let error) = result {
                    span.attributes["error.type"] = error.code.description
                    span.setStatus(SpanStatus(code: .error))
                }
                return result
            }
            Telemetry.refreshFinished(succeeded: (try? result.get()) != nil, after: ContinuousClock.now - started)
            return result
        }
        if joined {
            store.logger.trace("joined the refresh in flight", metadata: ["credential": "\(id)"])
            Telemetry.refreshWait(.joined)
        }
        switch result {
        case .success(let refreshed):
            store.logger.debug(
                "access token ready",
                metadata: [
                    "credential": "\(id)", "expiresAt": "\(refreshed.token.expiresAt.map { "\($0)" } ?? "never")",
                ])
            if let failure = refreshed.idTokenFailure {
                store.logger.error(
                    "the refreshed ID token was rejected; the new access and refresh tokens were kept",
                    metadata: ["credential": "\(id)", "error": "\(failure)"])
            }
        case .failure(let error):
            store.logger.debug("refresh failed", metadata: ["credential": "\(id)", "error": "\(error)"])
        }
        return result
    }

    /// Gets what the refresh needs (metadata, keys) while nothing is spent yet, then refreshes in
    /// the credential's transaction.
    private func performRefresh(_ need: RefreshNeed, preparing token: Token) async -> Result<Refreshed, ProviderError> {
        let provider = self.provider
        let result: Result<Refreshed, ProviderError>
        do throws(ProviderError) {
            try await store.capabilities.sharing { () async throws(ProviderError) in
                try await provider.prepareRefresh(of: token)
            }
            result = try await transaction { transaction in await transaction.refresh(need, with: provider) }
        } catch {
            result = .failure(error)
        }
        if case .failure(let error) = result, error.code == .dpopKeyUnavailable {
            // The grant can never be used again: revoked now, or queued, so that it does not
            // stay alive on the server with nothing able to end it. After the lease: the outbox
            // write must not wait for it.
            store.logger.notice("the DPoP key is gone; ending the grant", metadata: ["credential": "\(id)"])
            await store.retire(token, replacedBy: nil, account: nil, provider: provider)
        }
        return result
    }
}
