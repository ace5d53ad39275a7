public import Foundation
import Logging
import Tracing

/// A stored credential together with the provider it came from: gets a fresh access token,
/// revokes, removes, asks for user info and introspection.
///
/// Get one from ``OpenIDProvider/signIn(_:scopes:into:tags:makeDefault:)`` or
/// ``OpenIDProvider/credential(_:in:)``; handles for the same credential are shared, so
/// concurrent ``accessToken(minimumValidity:)`` calls cause one refresh.
public actor Credential {
    /// The credential's id in its store.
    public nonisolated let id: CredentialID
    /// The store that holds it.
    public nonisolated let store: CredentialStore
    /// The provider its tokens came from.
    public nonisolated let provider: any IdentityProvider
    private var refreshing: Task<Result<Refreshed, ProviderError>, Never>?

    /// The tag set on a credential whose refresh token was rejected.
    public static let needsSignInTag = "latchkey.needs-sign-in"
    /// The tag that marks the stored access token as rejected by a resource server
    /// (``reject(accessToken:)``). It holds a fingerprint of the token, never the token.
    public static let rejectedAccessTokenTag = "latchkey.rejected-access-token"

    /// Creates a handle. Only the store creates handles (``CredentialStore/credential(_:provider:clock:)``),
    /// so that every caller of one credential shares one refresh.
    init(id: CredentialID, store: CredentialStore, provider: any IdentityProvider) {
        self.id = id
        self.store = store
        self.provider = provider
    }

    /// The current date, by the store's clock.
    private func now() -> Date { store.clock.date }

    /// The credential as stored now.
    public func stored() async throws(ProviderError) -> StoredCredential {
        let stored: StoredCredential?
        do {
            stored = try await store.credential(for: id)
        } catch {
            throw .storage(error)
        }
        guard let stored else { throw .storage(.credentialNotFound(id)) }
        return stored
    }

    /// The current tokens.
    public var token: Token {
        get async throws(ProviderError) { try await stored().token }
    }

    /// An access token valid for at least `minimumValidity` seconds, refreshed first when needed.
    ///
    /// Concurrent callers share one refresh: the callers of this handle, and every process or
    /// machine that shares the store (through its refresh lease). The new tokens are stored as
    /// soon as the provider answers. A rejected refresh token throws
    /// ``ProviderError/Code/signInRequired`` and deletes nothing; network failures are
    /// retryable and delete nothing.
    ///
    /// For tokens that live less than twice `minimumValidity`, half their lifetime is used
    /// instead, so a provider's short-lived tokens are not refreshed on every call.
    ///
    /// When a refresh brings an ID token that fails verification, the new access and refresh
    /// tokens are kept and the access token is returned; the failure is logged, and
    /// ``refresh()`` throws it.
    public func accessToken(minimumValidity: TimeInterval = 60) async throws(ProviderError) -> String {
        let current = try await stored()
        if let accessToken = current.token.accessToken, !needsRefresh(current, minimumValidity: minimumValidity) {
            return accessToken
        }
        let refreshed = try await sharedRefresh(.accessToken(minimumValidity)).get()
        guard let accessToken = refreshed.token.accessToken else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no access token.")
        }
        return accessToken
    }

    /// Whether `credential`'s access token is about to expire, or a resource server rejected it
    /// (``reject(accessToken:)``).
    private func needsRefresh(_ credential: StoredCredential, minimumValidity: TimeInterval) -> Bool {
        let token = credential.token
        if let rejected = credential.metadata.tags[Self.rejectedAccessTokenTag],
            let accessToken = token.accessToken, rejected == Self.fingerprint(accessToken)
        {
            return true
        }
        var margin = minimumValidity
        if let expiresAt = token.expiresAt {
            margin = min(margin, expiresAt.timeIntervalSince(token.issuedAt) / 2)
        }
        return token.expires(within: margin, at: now())
    }

    /// What a refresh is for: when the stored credential already has it (another caller or
    /// process refreshed meanwhile), the refresh is not sent.
    private enum RefreshNeed: Sendable {
        /// A refresh asked for explicitly: always sent.
        case always
        /// An access token valid for this many seconds.
        case accessToken(TimeInterval)
        /// An ID token valid for this many seconds.
        case idToken(TimeInterval)
    }

    private func isSatisfied(_ need: RefreshNeed, by credential: StoredCredential) -> Bool {
        switch need {
        case .always:
            return false
        case .accessToken(let minimumValidity):
            return credential.token.accessToken != nil && !needsRefresh(credential, minimumValidity: minimumValidity)
        case .idToken(let minimumValidity):
            return credential.token.idTokenExpiresAt.map { $0.timeIntervalSince(now()) >= minimumValidity } ?? false
        }
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
        if let idToken = current.token.idToken, isSatisfied(.idToken(minimumValidity), by: current) {
            return idToken
        }
        let refreshed = try await sharedRefresh(.idToken(minimumValidity)).get()
        if let failure = refreshed.idTokenFailure { throw failure }
        guard let idToken = refreshed.token.idToken, let expiry = refreshed.token.idTokenExpiresAt, expiry > now()
        else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no new ID token.")
        }
        return idToken
    }

    /// Refreshes now, whatever the access token's expiry, and returns the stored tokens.
    ///
    /// Throws ``ProviderError/Code/idTokenRejected`` when the new ID token fails verification;
    /// the new access and refresh tokens are stored all the same (the spent refresh token is
    /// never fallen back to).
    @discardableResult
    public func refresh() async throws(ProviderError) -> Token {
        let refreshed = try await sharedRefresh(.always).get()
        if let failure = refreshed.idTokenFailure { throw failure }
        return refreshed.token
    }

    /// What one refresh left in the store.
    private struct Refreshed: Sendable {
        var token: Token
        /// Why the new ID token was not stored, when it was not.
        var idTokenFailure: ProviderError?
    }

    private func sharedRefresh(_ need: RefreshNeed) async -> Result<Refreshed, ProviderError> {
        if let refreshing {
            store.logger.trace("joining the refresh in flight", metadata: ["credential": "\(id)"])
            Telemetry.refreshWait(.joined)
            return await refreshing.value
        }
        let task = Task {
            let started = ContinuousClock.now
            let result = await withSpan(LatchkeyTelemetry.SpanName.refresh) { span in
                let result = await self.performRefresh(need)
                if case .failure(let error) = result {
                    span.attributes["error.type"] = error.code.description
                    span.setStatus(SpanStatus(code: .error))
                }
                return result
            }
            Telemetry.refreshFinished(succeeded: (try? result.get()) != nil, after: ContinuousClock.now - started)
            return result
        }
        refreshing = task
        let result = await task.value
        refreshing = nil
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

    /// One refresh, in the order that keeps a rotated refresh token safe:
    /// 1. get what the refresh needs (metadata, keys) while nothing is spent yet;
    /// 2. take the refresh lease; read the credential again, and stop there when another
    ///    caller (another process, another machine) already refreshed it;
    /// 3. send the refresh token and store the answer at once;
    /// 4. verify a new ID token and store it, or report why not; release the lease. (A caller
    ///    that waited for the lease then finds the new ID token too, and sends nothing.)
    private func performRefresh(_ need: RefreshNeed) async -> Result<Refreshed, ProviderError> {
        do throws(ProviderError) {
            try await provider.prepareRefresh(of: try await stored().token)
            do {
                return try await store.withRefreshLease(id) {
                    switch await self.exchangeHoldingLease(need) {
                    case .failure(let error):
                        return .failure(error)
                    case .success(let exchanged):
                        guard let pendingIDToken = exchanged.pendingIDToken else {
                            return .success(Refreshed(token: exchanged.stored.token))
                        }
                        return .success(await self.storeVerifiedIDToken(pendingIDToken, exchanged: exchanged))
                    }
                }
            } catch {
                throw .storage(error)
            }
        } catch {
            return .failure(error)
        }
    }

    /// What the token endpoint's answer left in the store.
    private struct Exchanged: Sendable {
        /// The credential as stored after the answer (with the previous ID token).
        var stored: StoredCredential
        /// The credential as it was before the refresh.
        var previous: Token
        /// A new ID token that is not verified yet.
        var pendingIDToken: String?
    }

    private func exchangeHoldingLease(_ need: RefreshNeed) async -> Result<Exchanged, ProviderError> {
        do throws(ProviderError) {
            var current = try await stored()
            // Another caller sharing the store may have refreshed while this one waited.
            if isSatisfied(need, by: current) {
                store.logger.trace("refreshed by another holder meanwhile", metadata: ["credential": "\(id)"])
                Telemetry.refreshWait(.refreshedElsewhere)
                return .success(Exchanged(stored: current, previous: current.token))
            }
            var answer: Token
            do {
                store.logger.debug("refreshing", metadata: ["credential": "\(id)"])
                answer = try await sendRefresh(current.token)
            } catch  where error.requiresSignIn {
                // A process that does not take the lease (an older Latchkey) may have rotated
                // the refresh token meanwhile: only a rejection of the stored one is final.
                let again = try await stored()
                guard again.token.refreshToken == current.token.refreshToken else {
                    store.logger.debug(
                        "refresh token rotated elsewhere; using the new one", metadata: ["credential": "\(id)"])
                    current = again
                    if isSatisfied(need, by: again) {
                        return .success(Exchanged(stored: again, previous: again.token))
                    }
                    answer = try await sendRefresh(again.token)
                    return .success(try await storeAnswer(answer, replacing: again))
                }
                await markNeedsSignIn(rejected: current.token.refreshToken)
                throw error
            }
            return .success(try await storeAnswer(answer, replacing: current))
        } catch {
            return .failure(error)
        }
    }

    /// Sends the refresh token to the provider, and counts the request by its outcome.
    private func sendRefresh(_ token: Token) async throws(ProviderError) -> Token {
        do {
            let answer = try await provider.exchangeRefreshToken(of: token)
            Telemetry.refreshRequest(.success(()))
            return answer
        } catch {
            Telemetry.refreshRequest(.failure(error))
            throw error
        }
    }

    /// Stores the token endpoint's answer before anything else can fail, keeping the previous
    /// ID token until the new one is verified.
    private func storeAnswer(_ answer: Token, replacing current: StoredCredential) async throws(ProviderError)
        -> Exchanged
    {
        var unverified = answer
        let newIDToken = answer.idToken != current.token.idToken ? answer.idToken : nil
        unverified.idToken = current.token.idToken
        let stored: StoredCredential
        do {
            stored = try await store.update(id) { credential in
                credential.replaceToken(with: unverified)
                credential.metadata.tags[Self.needsSignInTag] = nil
                credential.metadata.tags[Self.rejectedAccessTokenTag] = nil
            }
        } catch {
            throw .storage(error)
        }
        return Exchanged(stored: stored, previous: current.token, pendingIDToken: newIDToken)
    }

    /// Verifies a refreshed ID token and stores it with the account metadata it carries. A
    /// failure leaves the new access and refresh tokens in place and is reported.
    private func storeVerifiedIDToken(_ idToken: String, exchanged: Exchanged) async -> Refreshed {
        var candidate = exchanged.stored.token
        candidate.idToken = idToken
        do throws(ProviderError) {
            try await provider.verifyRefreshedIDToken(of: candidate, previous: exchanged.previous)
        } catch {
            return Refreshed(
                token: exchanged.stored.token,
                idTokenFailure: ProviderError(
                    error.code, endpoint: error.endpoint,
                    reason:
                        "The refreshed ID token was rejected; the new access and refresh tokens were kept. \(error.reason)",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status,
                    retryAfter: error.retryAfter, underlying: error.underlying))
        }
        let accessToken = candidate.accessToken
        do {
            let stored = try await store.update(id) { credential in
                // Only onto the tokens it came with: a later refresh has its own ID token.
                guard credential.token.accessToken == accessToken else { return }
                var token = credential.token
                token.idToken = idToken
                credential.replaceToken(with: token)
            }
            return Refreshed(token: stored.token)
        } catch {
            return Refreshed(token: exchanged.stored.token, idTokenFailure: .storage(error))
        }
    }

    /// Tags the credential as needing sign-in, unless its refresh token changed meanwhile.
    private func markNeedsSignIn(rejected refreshToken: String?) async {
        do {
            try await store.update(id) { credential in
                guard credential.token.refreshToken == refreshToken else { return }
                credential.metadata.tags[Self.needsSignInTag] = "true"
            }
        } catch {
            store.logger.debug("could not tag the credential", metadata: ["credential": "\(id)", "error": "\(error)"])
        }
    }

    /// Revokes tokens at the provider (RFC 7009), every kind in parallel, and drops each revoked
    /// token from the stored credential. A credential with nothing usable left is removed from
    /// the store; a token whose revocation failed stays.
    ///
    /// `.refreshToken` also revokes the access token: the grant ends, and a provider that does
    /// not cascade on its own must not leave the access token alive. A kind the provider
    /// revokes only with the refresh token is not sent on its own (see
    /// ``IdentityProvider/revocableKinds``).
    ///
    /// The revocation holds the refresh lease, so no refresh interleaves with it; only the
    /// values that were revoked leave the store.
    public func revoke(_ scope: RevocationScope = .all) async -> RevocationResult {
        await withSpan(LatchkeyTelemetry.SpanName.revoke) { span in
            let result: RevocationResult
            do throws(StorageError) {
                result = try await store.withRefreshLease(id) { await self.revokeHoldingLease(scope) }
            } catch {
                result = RevocationResult(outcomes: [.accessToken: .failed(.storage(error))], removedFromStore: false)
            }
            if !result.succeeded { span.setStatus(SpanStatus(code: .error)) }
            return result
        }
    }

    private func revokeHoldingLease(_ scope: RevocationScope) async -> RevocationResult {
        let current: StoredCredential
        do {
            current = try await stored()
        } catch {
            return RevocationResult(outcomes: [.accessToken: .failed(error)], removedFromStore: false)
        }
        let kinds: [TokenKind]
        switch scope {
        case .all: kinds = [.accessToken, .refreshToken, .deviceSecret]
        case .accessToken: kinds = [.accessToken]
        case .refreshToken: kinds = [.refreshToken, .accessToken]
        case .deviceSecret: kinds = [.deviceSecret]
        }
        var outcomes = await RevocationFanOut.revoke(kinds, of: current.token, at: provider)
        let ended = RevocationFanOut.ended(outcomes)
        let removed: Bool
        do {
            removed = try await dropEnded(ended, of: current.token)
        } catch {
            // The server side is done; report that the local copy could not be updated.
            for kind in ended { outcomes[kind] = .failed(error) }
            removed = false
        }
        for (kind, outcome) in outcomes {
            var metadata: Logger.Metadata = ["credential": "\(id)", "token": "\(kind)"]
            switch outcome {
            case .revoked: metadata["outcome"] = "revoked"
            case .endsWithRefreshToken: metadata["outcome"] = "ends with the refresh token"
            case .notPresent: metadata["outcome"] = "not present"
            case .failed(let error): (metadata["outcome"], metadata["error"]) = ("failed", "\(error)")
            }
            store.logger.debug("revocation", metadata: metadata)
        }
        return RevocationResult(outcomes: outcomes, removedFromStore: removed)
    }

    /// Drops the tokens that ended from the stored credential, by value: a token that replaced
    /// one of them meanwhile was never revoked and stays. Removes the credential when nothing
    /// usable is left. Returns whether it was removed.
    private func dropEnded(_ kinds: Set<TokenKind>, of revoked: Token) async throws(ProviderError) -> Bool {
        guard !kinds.isEmpty else { return false }
        let date = now()
        do {
            let stored = try await store.update(id) { credential in
                var token = credential.token
                for kind in kinds where token.value(of: kind) == revoked.value(of: kind) { token.discard(kind) }
                credential.token = token
            }
            guard !stored.token.isUsable(at: date) else { return false }
            return try await store.remove(id)
        } catch {
            throw .storage(error)
        }
    }

    /// Removes the credential from this device only. No server is told: its tokens stay valid
    /// on the server until they expire. Revoke first to end them.
    public func remove() async throws(ProviderError) {
        do {
            try await store.remove(id)
        } catch {
            throw .storage(error)
        }
    }

    /// The user's claims from the userinfo endpoint. When the provider rejects the access
    /// token, it is refreshed once and the request tried again.
    public func userInfo() async throws(ProviderError) -> [String: JSONValue] {
        let accessToken = try await accessToken()
        do {
            return try await provider.userInfo(accessToken: accessToken)
        } catch {
            guard error.rejectedAccessToken else { throw error }
            let refreshed = try await refresh()
            guard let accessToken = refreshed.accessToken else { throw error }
            return try await provider.userInfo(accessToken: accessToken)
        }
    }

    /// What the provider says about one of this credential's tokens (RFC 7662).
    public func introspect(_ kind: TokenKind = .accessToken) async throws(ProviderError) -> Introspection {
        guard let value = try await stored().token.value(of: kind) else {
            throw ProviderError(.unsupported, reason: "The credential has no \(kind).")
        }
        return try await provider.introspect(value, kind: kind)
    }
}
