import Foundation
import Logging
import Tracing

extension CredentialStore {
    /// Signs accounts out: on this device, or on every device, ending the provider session if
    /// asked, and reports every step.
    ///
    /// For each account, in its credential transaction (its lease taken once, the credential
    /// opened once): when a global sign-out needs a valid access token and it has expired,
    /// refresh first; then the global sign-out (before any revocation, which could kill the
    /// access token it needs); then the revocations and the end of the provider session, all at
    /// once; then the hooks; then local removal. Accounts are signed out in parallel. The
    /// provider of each credential must have been registered with ``register(_:)``.
    ///
    /// With ``SignOutPolicy/alwaysLocal`` every server step that failed — a revocation, the
    /// global sign-out, the end of the provider session — goes to the outbox
    /// (``drainOutbox(_:)`` sends it later) and the result is `.partial`. With
    /// ``SignOutPolicy/serverFirst`` a failed server step leaves the account signed in and the
    /// result is `.failed`.
    public func signOut(_ scope: SignOutScope = .current, options: SignOutOptions = .local) async -> SignOutResult {
        let started = ContinuousClock.now
        let result = await withSpan(LatchkeyTelemetry.SpanName.signOut) { span in
            span.attributes["latchkey.sign_out.scope"] = options.global ? "global" : "device"
            // A sign-out cancelled before it began (the user pressed Cancel) changes nothing.
            let result =
                Task.isCancelled
                ? .failed(SignOutError(.cancelled, reason: "The sign-out was cancelled; nothing changed."), [])
                : await signOutAccounts(scope, options: options)
            span.attributes["latchkey.sign_out.outcome"] = result.outcomeWord
            if case .failed = result { span.setStatus(SpanStatus(code: .error)) }
            return result
        }
        Telemetry.signOut(global: options.global, result, after: ContinuousClock.now - started)
        return result
    }

    /// The accounts of `scope`, read without opening any token.
    private func accountsToSignOut(_ scope: SignOutScope) async throws(StorageError) -> [AccountSummary] {
        let all = try await storage.accounts()
        switch scope {
        case .current:
            guard let id = try await storage.defaultCredentialID() else { return [] }
            return all.filter { $0.id == id }
        case .account(let id):
            return all.filter { $0.id == id }
        case .all:
            return all
        }
    }

    private func signOutAccounts(_ scope: SignOutScope, options: SignOutOptions) async -> SignOutResult {
        let accounts: [AccountSummary]
        do {
            accounts = try await accountsToSignOut(scope)
        } catch {
            return .failed(
                SignOutError(
                    .storageFailed, reason: "The credential store could not be read: \(error)", underlying: error,
                    retryable: error.isRetryable), [])
        }
        if accounts.isEmpty, scope != .all {
            return .failed(
                SignOutError(.noSuchAccount, reason: "There is no such account signed in on this device."), [])
        }
        var outcomes: [AccountOutcome] = []
        await withTaskGroup(of: AccountOutcome.self) { group in
            for account in accounts {
                group.addTask { await self.signOutAccount(account, options: options) }
            }
            for await outcome in group { outcomes.append(outcome) }
        }
        // Report in the store's order, whatever order the accounts finished in.
        let order = Dictionary(uniqueKeysWithValues: accounts.enumerated().map { ($1.id, $0) })
        outcomes.sort { order[$0.account, default: 0] < order[$1.account, default: 0] }
        let steps = outcomes.flatMap(\.steps)
        for step in steps { log(step) }
        let failures = outcomes.compactMap(\.failure)
        if let first = failures.first {
            // One account: its own reason. Several: every one of them, and which are signed out.
            guard accounts.count > 1 else { return .failed(first, steps) }
            let names = failures.map { failure in
                let name = steps.first { $0.account == failure.account }?.accountName ?? failure.account?.rawValue
                return "\(name ?? "an account") (\(failure.reason))"
            }
            let some = failures.count < accounts.count
            return .failed(
                SignOutError(
                    some ? .someAccountsStillSignedIn : first.code, account: first.account,
                    reason: some
                        ? "\(failures.count) of \(accounts.count) accounts are still signed in: \(names.joined(separator: "; ")); the others are signed out."
                        : "No account was signed out: \(names.joined(separator: "; ")).",
                    underlying: first.underlying, retryable: failures.allSatisfy(\.isRetryable),
                    accountFailures: failures), steps)
        }
        // Damaged records cannot be signed out (their tokens cannot be read); say so.
        let damaged = outcomes.compactMap(\.damaged)
        if !damaged.isEmpty {
            return .failed(
                SignOutError(
                    .damagedRecord,
                    reason:
                        "Every readable account was signed out; \(damaged.count) damaged record(s) stay: \(damaged.map(\.id).joined(separator: ", ")). Remove them on purpose once looked at."
                ), steps)
        }
        let incomplete = steps.contains { $0.status == .failed || $0.status == .queued }
        return incomplete ? .partial(steps) : .complete(steps)
    }

    /// What became of one account.
    private struct AccountOutcome: Sendable {
        var account: CredentialID
        var steps: [SignOutStep] = []
        var failure: SignOutError?
        /// Its record, when it cannot be read (``SignOutScope/all`` reports it at the end).
        var damaged: DamagedRecord?
    }

    /// One account: what its provider can do is found out first (before the lease: it may need
    /// the network), then the plan runs in the credential's transaction.
    private func signOutAccount(_ account: AccountSummary, options: SignOutOptions) async -> AccountOutcome {
        let identity = ProviderIdentity(issuer: account.metadata.issuer, clientID: account.metadata.clientID)
        let provider = provider(for: identity)
        var support: SignOutPlan.GlobalSupport?
        if let provider {
            support = .unsupported
            if options.global {
                do {
                    support = try await provider.supportsGlobalSignOut() ? .supported : .unsupported
                } catch {
                    support = .unknown(error)
                }
            }
        }
        let globalSupport = support
        do {
            return try await transaction(account.id) { transaction in
                await Self.signOut(
                    account, in: transaction, provider: provider, globalSupport: globalSupport, options: options)
            }
        } catch {
            return AccountOutcome(
                account: account.id,
                failure: SignOutError(
                    .storageFailed, account: account.id,
                    reason: "The credential store failed before the sign-out began; still signed in: \(error)",
                    underlying: error, retryable: error.isRetryable))
        }
    }

    /// The executor: runs each step the plan decides, in the transaction, and hands the outcome
    /// back to the plan.
    private static func signOut(
        _ account: AccountSummary, in transaction: CredentialTransaction, provider: (any IdentityProvider)?,
        globalSupport: SignOutPlan.GlobalSupport?, options: SignOutOptions
    ) async -> AccountOutcome {
        let store = transaction.store
        let credential: StoredCredential
        do {
            guard let read = try await transaction.credential() else {
                let step = SignOutStep(
                    account: account.id, accountName: account.metadata.displayName, .localRemoval, .skipped,
                    reason: .init(.alreadyRemoved, "already removed from this device"))
                return AccountOutcome(account: account.id, steps: [step])
            }
            credential = read
        } catch {
            if error.code == .corruptRecord {
                return AccountOutcome(
                    account: account.id,
                    damaged: DamagedRecord(kind: .credential, id: account.id.rawValue, reason: error.reason))
            }
            return AccountOutcome(
                account: account.id,
                failure: SignOutError(
                    .storageFailed, account: account.id,
                    reason: "The credential store could not be read; still signed in: \(error)", underlying: error,
                    retryable: error.isRetryable))
        }
        var token = credential.token
        var plan = SignOutPlan(
            account: credential.id, accountName: credential.metadata.displayName, options: options,
            globalSupport: globalSupport, tokens: SignOutPlan.Tokens(token, at: store.now()))
        var action = plan.start()
        while true {
            switch action {
            case .refresh:
                let refreshed = await refresh(in: transaction, provider: provider)
                if case .success(let fresh) = refreshed { token = fresh }
                action = plan.refreshed(refreshed.map { SignOutPlan.Tokens($0, at: store.now()) })
            case .globalSignOut:
                action = plan.signedOutGlobally(await globalSignOut(token, provider: provider))
            case .revokeAndEndSession(let kinds, let endSession):
                let (outcomes, session) = await revokeAndEndSession(
                    kinds, endSession: endSession, of: token, provider: provider)
                action = plan.revoked(outcomes, endSession: session)
            case .runHook(let index):
                action = plan.ranHook(index, error: await run(options.hooks[index], on: credential))
            case .queue(let steps):
                action = plan.queued(await queue(steps, of: token, account: credential, in: transaction))
            case .keep(let revoked):
                do {
                    try await transaction.discard(revoked, of: token, keepingCredential: true)
                    action = plan.kept(nil)
                } catch {
                    store.logger.debug("revoked tokens could not be dropped", metadata: ["error": "\(error)"])
                    action = plan.kept(error)
                }
            case .remove:
                do {
                    action = plan.removed(.success(try await transaction.remove()))
                } catch {
                    action = plan.removed(.failure(error))
                }
            case .finish(let outcome):
                return AccountOutcome(account: outcome.account, steps: outcome.steps, failure: outcome.failure)
            }
        }
    }

    private static func refresh(in transaction: CredentialTransaction, provider: (any IdentityProvider)?) async
        -> Result<Token, ProviderError>
    {
        guard let provider else {
            return .failure(ProviderError(.unsupported, reason: "No provider is registered for the account."))
        }
        do throws(ProviderError) {
            let current: Token?
            do {
                current = try await transaction.credential()?.token
            } catch {
                throw .storage(error)
            }
            if let current { try await provider.prepareRefresh(of: current) }
        } catch {
            return .failure(error)
        }
        return await transaction.refresh(.accessToken(0), with: provider).map(\.token)
    }

    private static func globalSignOut(_ token: Token, provider: (any IdentityProvider)?) async -> Result<
        Void, ProviderError
    > {
        guard let provider, token.accessToken != nil else {
            return .failure(ProviderError(.unsupported, endpoint: .globalSignOut, reason: "Nothing to sign out with."))
        }
        do throws(ProviderError) {
            try await provider.globalSignOut(for: token)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// The revocations (through the shared fan-out) and the end-session request, at once. A
    /// session token's "revocation" is its logout: ending the session revokes no OAuth token,
    /// and revoking them ends no session, so both are sent.
    private static func revokeAndEndSession(
        _ kinds: [TokenKind], endSession: Bool, of token: Token, provider: (any IdentityProvider)?
    ) async -> ([TokenKind: RevocationOutcome], Result<URL?, ProviderError>?) {
        guard let provider else { return ([:], nil) }
        async let outcomes = RevocationFanOut.revoke(kinds, of: token, at: provider)
        async let session: Result<URL?, ProviderError>? = endSession ? Self.endSession(token, provider: provider) : nil
        return (await outcomes, await session)
    }

    private static func endSession(_ token: Token, provider: any IdentityProvider) async -> Result<URL?, ProviderError>
    {
        do throws(ProviderError) {
            return .success(try await provider.endSession(idToken: token.idToken))
        } catch {
            return .failure(error)
        }
    }

    private static func run(_ hook: SignOutHook, on credential: StoredCredential) async -> (any Error & Sendable)? {
        do {
            try await hook.run(credential)
            return nil
        } catch {
            return error
        }
    }

    /// Queues the steps in the outbox: a revocation holds its token; a global sign-out or an
    /// end-session request the tokens it needs (sealed like every entry). A revocation or
    /// end-session request queued with a global sign-out waits for it.
    private static func queue(
        _ steps: [SignOutPlan.QueuedStep], of token: Token, account credential: StoredCredential,
        in transaction: CredentialTransaction
    ) async -> [(SignOutPlan.QueuedStep, StorageError?)] {
        let store = transaction.store
        let now = store.now()
        let global = UUID()
        var results: [(SignOutPlan.QueuedStep, StorageError?)] = []
        // One entry per token: the access token's step covers the resources' access tokens.
        let entries = steps.flatMap { step -> [(SignOutPlan.QueuedStep, String, Date?)] in
            guard let kind = step.action.revokedKind else { return [(step, OutboxGrant(token).sealedText, nil)] }
            let values = token.values(of: kind)
            return (values.isEmpty ? [""] : values).map { value in
                let expiry =
                    value == token.value(of: kind)
                    ? token.expiry(of: kind) : token.resourceTokens.values.first { $0.accessToken == value }?.expiresAt
                return (step, value, expiry)
            }
        }
        for (step, secret, expiry) in entries {
            let entry = OutboxEntry(
                id: step.action == .globalSignOut ? global : UUID(), provider: token.provider, action: step.action,
                token: secret, account: credential.metadata.displayName, tokenExpiresAt: expiry, createdAt: now,
                attempts: 1,
                nextAttemptAt: now.addingTimeInterval(
                    OutboxBackoff.default.delay(afterAttempts: 1, retryAfter: step.retryAfter)),
                lastError: step.lastError, failedPermanently: step.failedForGood,
                waitsFor: step.waitsForGlobalSignOut ? global : nil)
            var failure: StorageError?
            do {
                try await transaction.enqueue(entry)
            } catch {
                failure = error
            }
            // A step of several tokens is queued when every one of them is.
            if let index = results.firstIndex(where: { $0.0.action == step.action }) {
                results[index].1 = results[index].1 ?? failure
            } else {
                results.append((step, failure))
            }
        }
        return results
    }

    private func log(_ step: SignOutStep) {
        var metadata: Logger.Metadata = [
            "credential": "\(step.account)", "step": "\(step.kind)", "status": "\(step.status.rawValue)",
        ]
        if let reason = step.reason { metadata["reason"] = "\(reason.code): \(reason)" }
        if let error = step.error { metadata["error"] = "\(error)" }
        logger.debug("sign-out step", metadata: metadata)
    }
}
