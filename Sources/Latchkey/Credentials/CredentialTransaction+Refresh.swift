import Foundation
import Logging

/// What one refresh left in the store.
package struct Refreshed: Sendable {
    /// The tokens as stored afterwards.
    package var token: Token
    /// Why the new ID token was not stored, when it was not.
    package var idTokenFailure: ProviderError?
}

extension CredentialTransaction {
    /// Refreshes the credential, unless it already has what `need` asks for (another holder
    /// refreshed it meanwhile), in the order that keeps a rotated refresh token safe:
    /// 1. send the refresh token, and store the answer at once (the previous ID token stays
    ///    until the new one is verified);
    /// 2. verify a new ID token and store it, or report why not: the new access and refresh
    ///    tokens stay either way.
    ///
    /// A rejected refresh token is final only when it is still the stored one (a writer that
    /// takes no lease may have rotated it meanwhile); the credential is then marked as needing
    /// sign-in, and nothing is deleted. A credential so marked is refreshed again only when asked
    /// explicitly (``RefreshNeed/always``). A network failure changes nothing.
    ///
    /// The caller fetches what the refresh needs first (``IdentityProvider/prepareRefresh(of:)``),
    /// so that nothing can fail between spending the refresh token and storing its successor.
    /// The whole refresh is ``UninterruptibleWork``: a process that defers its signals lets it
    /// store the answer first.
    package func refresh(_ need: RefreshNeed, with provider: any IdentityProvider) async -> Result<
        Refreshed, ProviderError
    > {
        await UninterruptibleWork.run { () async -> Result<Refreshed, ProviderError> in
            await self.refreshOnce(need, with: provider)
        }
    }

    private func refreshOnce(_ need: RefreshNeed, with provider: any IdentityProvider) async -> Result<
        Refreshed, ProviderError
    > {
        do throws(ProviderError) {
            guard var current = try await stored() else {
                throw .storage(.credentialNotFound(id))
            }
            if current.satisfies(need, at: store.clock.date) {
                store.logger.trace("refreshed by another holder meanwhile", metadata: ["credential": "\(id)"])
                Telemetry.refreshWait(.refreshedElsewhere)
                return .success(Refreshed(token: current.token))
            }
            // A refresh token the provider rejected is not sent again on its own: a client that
            // retried would send it with every request (an MCP host retrying a call, a resource
            // that keeps refusing the access token), and to a provider that revokes a whole
            // family on reuse a replay looks like theft. Only an explicit refresh tries it again;
            // a new sign-in clears the mark.
            if current.state.needsSignIn, need != .always {
                throw ProviderError(
                    .signInRequired, endpoint: .token,
                    reason: "The provider rejected this account's refresh token earlier; sign in again.")
            }
            var answer: Token
            do {
                store.logger.debug("refreshing", metadata: ["credential": "\(id)"])
                answer = try await exchange(current.token, with: provider)
            } catch  where error.requiresSignIn {
                guard let again = try await storedAgain(), again.token.refreshToken != current.token.refreshToken else {
                    await markNeedsSignIn(rejected: current.token.refreshToken)
                    throw error
                }
                store.logger.debug(
                    "refresh token rotated elsewhere; using the new one", metadata: ["credential": "\(id)"])
                current = again
                if again.satisfies(need, at: store.clock.date) { return .success(Refreshed(token: again.token)) }
                answer = try await exchange(again.token, with: provider)
            }
            let (stored, pendingIDToken) = try await storeAnswer(answer, replacing: current)
            guard let pendingIDToken else { return .success(Refreshed(token: stored.token)) }
            return .success(
                await storeVerifiedIDToken(pendingIDToken, onto: stored.token, previous: current.token, with: provider))
        } catch {
            return .failure(error)
        }
    }

    /// The credential as held, its storage failure as a provider error.
    func stored() async throws(ProviderError) -> StoredCredential? {
        do {
            return try await credential()
        } catch {
            throw .storage(error)
        }
    }

    func storedAgain() async throws(ProviderError) -> StoredCredential? {
        do {
            return try await reread()
        } catch {
            throw .storage(error)
        }
    }

    /// Sends `token`'s refresh token to the provider (see ``keepingRotatedRefreshToken(of:_:)``).
    private func exchange(_ token: Token, with provider: any IdentityProvider) async throws(ProviderError) -> Token {
        try await keepingRotatedRefreshToken(of: token) { () async throws(ProviderError) in
            try await Self.send(token, to: provider)
        }
    }

    /// Runs `body`, which spends `token`'s refresh token, and returns its new tokens. An answer
    /// refused as a whole that carried a rotated refresh token
    /// (``RefreshAnswer/refused(_:rotatedRefreshToken:)``) leaves that token stored in place of
    /// the one sent — the only live one now — and the rest of the credential as it was; the
    /// refusal is thrown.
    func keepingRotatedRefreshToken(
        of token: Token, _ body: () async throws(ProviderError) -> RefreshAnswer
    ) async throws(ProviderError) -> Token {
        switch try await body() {
        case .token(let refreshed):
            return refreshed
        case .refused(let refusal, let rotated):
            let sent = token.refreshToken
            do {
                try await update { credential in
                    guard credential.token.refreshToken == sent else { return }
                    var kept = credential.token
                    kept.refreshToken = rotated
                    credential.replaceToken(with: kept)
                }
            } catch {
                store.logger.warning(
                    "the rotated refresh token of a refused answer could not be stored",
                    metadata: ["credential": "\(id)", "error": "\(error)"])
            }
            throw refusal
        }
    }

    /// Sends the refresh token to the provider, and counts the request by its outcome.
    private static func send(_ token: Token, to provider: any IdentityProvider) async throws(ProviderError)
        -> RefreshAnswer
    {
        do {
            let answer = try await provider.exchangeRefreshToken(of: token)
            if case .refused(let refusal, _) = answer {
                Telemetry.refreshRequest(.failure(refusal))
            } else {
                Telemetry.refreshRequest(.success(()))
            }
            return answer
        } catch {
            Telemetry.refreshRequest(.failure(error))
            throw mayHaveRotated(error)
        }
    }

    /// An answer lost after the provider got the request — unreadable, too large, or cut off by
    /// the timeout — may be one it acted on, rotating the refresh token: the error says so. The
    /// stored refresh token stays, and the next refresh tries it once before the account is
    /// taken as signed out (a rejection then marks it, as any rejection does).
    private static func mayHaveRotated(_ error: ProviderError) -> ProviderError {
        let transport = (error.underlying as? TransportError)?.kind
        guard
            error.code == .invalidResponse
                || (error.code == .transport && (transport == .bodyTooLarge || transport == .timedOut))
        else { return error }
        return ProviderError(
            error.code, endpoint: error.endpoint,
            reason:
                "\(error.reason) The provider may have rotated the refresh token; sign in again if the next refresh fails.",
            oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status,
            retryAfter: error.retryAfter, underlying: error.underlying)
    }

    /// Stores the token endpoint's answer before anything else can fail, keeping the previous
    /// ID token until the new one is verified. Returns the stored credential and the new ID
    /// token still to verify.
    private func storeAnswer(_ answer: Token, replacing current: StoredCredential) async throws(ProviderError)
        -> (StoredCredential, pendingIDToken: String?)
    {
        var unverified = answer
        let newIDToken = answer.idToken != current.token.idToken ? answer.idToken : nil
        unverified.idToken = current.token.idToken
        let token = unverified
        do {
            let stored = try await update { credential in
                credential.replaceToken(with: token)
                credential.state = CredentialState()
            }
            return (stored, newIDToken)
        } catch {
            throw .storage(error)
        }
    }

    /// Verifies a refreshed ID token and stores it with the account metadata it carries. A
    /// failure leaves the new access and refresh tokens in place and is reported.
    private func storeVerifiedIDToken(
        _ idToken: String, onto stored: Token, previous: Token, with provider: any IdentityProvider
    ) async -> Refreshed {
        var candidate = stored
        candidate.idToken = idToken
        do throws(ProviderError) {
            try await provider.verifyRefreshedIDToken(of: candidate, previous: previous)
        } catch {
            return Refreshed(
                token: stored,
                idTokenFailure: ProviderError(
                    error.code, endpoint: error.endpoint,
                    reason:
                        "The refreshed ID token was rejected; the new access and refresh tokens were kept. \(error.reason)",
                    oauthError: error.oauthError, errorDescription: error.errorDescription, status: error.status,
                    retryAfter: error.retryAfter, underlying: error.underlying))
        }
        let accessToken = candidate.accessToken
        do {
            let updated = try await update { credential in
                // Only onto the tokens it came with: a later refresh has its own ID token.
                guard credential.token.accessToken == accessToken else { return }
                var token = credential.token
                token.idToken = idToken
                credential.replaceToken(with: token)
            }
            return Refreshed(token: updated.token)
        } catch {
            return Refreshed(token: stored, idTokenFailure: .storage(error))
        }
    }

    /// Marks the credential as needing sign-in, unless its refresh token changed meanwhile.
    func markNeedsSignIn(rejected refreshToken: String?) async {
        do {
            try await update { credential in
                guard credential.token.refreshToken == refreshToken else { return }
                credential.state.needsSignIn = true
            }
        } catch {
            store.logger.debug(
                "could not mark the credential as needing sign-in",
                metadata: ["credential": "\(id)", "error": "\(error)"])
        }
    }
}
