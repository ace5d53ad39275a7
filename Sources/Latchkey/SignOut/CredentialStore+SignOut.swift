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
                : await capabilities.sharing { await signOutAccounts(scope, options: options) }
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
        // The server steps, in the credential's transaction; the plan comes out of it when the
        // account's fate on this device is settled.
        let inTransaction: TransactionPart
        do {
            inTransaction = try await transaction(account.id) { transaction in
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
        guard case .left(var plan, let credential) = inTransaction else {
            if case .done(let outcome) = inTransaction { return outcome }
            return AccountOutcome(account: account.id)
        }
        // The lease is released: the hooks, each under its own deadline.
        var action: SignOutPlan.Action
        do {
            action = try plan.transactionEnded()
            while case .runHook(let index) = action {
                action = try plan.ranHook(index, error: await run(options.hooks[index], on: credential))
            }
        } catch {
            return Self.outOfOrder(error, plan: plan)
        }
        guard case .finish(let outcome) = action else {
            return Self.outOfOrder(SignOutPlan.OutOfOrder(event: "after the hooks", state: "\(action)"), plan: plan)
        }
        return AccountOutcome(account: outcome.account, steps: outcome.steps, failure: outcome.failure)
    }

    /// What the transaction's part of a sign-out came to: the plan, waiting for the lease to be
    /// released, with the credential it read; or an outcome already (nothing to sign out).
    private enum TransactionPart: Sendable {
        case left(SignOutPlan, StoredCredential)
        case done(AccountOutcome)
    }

    /// The executor, in the transaction: runs each step the plan asks for and hands the outcome
    /// back to it, until the plan asks to leave the transaction.
    private static func signOut(
        _ account: AccountSummary, in transaction: CredentialTransaction, provider: (any IdentityProvider)?,
        globalSupport: SignOutPlan.GlobalSupport?, options: SignOutOptions
    ) async -> TransactionPart {
        let store = transaction.store
        let credential: StoredCredential
        do {
            guard let read = try await transaction.credential() else {
                let step = SignOutStep(
                    account: account.id, accountName: account.metadata.displayName, .localRemoval, .skipped,
                    reason: .init(.alreadyRemoved, "already removed from this device"))
                return .done(AccountOutcome(account: account.id, steps: [step]))
            }
            credential = read
        } catch {
            if error.code == .corruptRecord {
                return .done(
                    AccountOutcome(
                        account: account.id,
                        damaged: DamagedRecord(kind: .credential, id: account.id.rawValue, reason: error.reason)))
            }
            return .done(
                AccountOutcome(
                    account: account.id,
                    failure: SignOutError(
                        .storageFailed, account: account.id,
                        reason: "The credential store could not be read; still signed in: \(error)", underlying: error,
                        retryable: error.isRetryable)))
        }
        var plan = SignOutPlan(
            for: credential, options: options, globalSupport: globalSupport, queueing: .init(date: store.now()))
        do {
            var action = try plan.start()
            while true {
                switch action {
                case .refresh:
                    action = try plan.refreshed(await refresh(in: transaction, provider: provider))
                case .globalSignOut:
                    action = try plan.signedOutGlobally(await globalSignOut(plan.token, provider: provider))
                case .revokeAndEndSession(let kinds, let endSession):
                    let (outcomes, session) = await revokeAndEndSession(
                        kinds, endSession: endSession, of: plan.token, provider: provider)
                    action = try plan.revoked(outcomes, endSession: session)
                case .queue(let entries):
                    do {
                        try await transaction.enqueue(entries)
                        action = try plan.queued(nil)
                    } catch let error as StorageError {
                        action = try plan.queued(error)
                    }
                case .keep(let revoked):
                    do {
                        try await transaction.discard(revoked, of: plan.token, keepingCredential: true)
                        action = try plan.kept(nil)
                    } catch let error as StorageError {
                        store.logger.debug("revoked tokens could not be dropped", metadata: ["error": "\(error)"])
                        action = try plan.kept(error)
                    }
                case .remove:
                    do {
                        action = try plan.removed(.success(try await transaction.remove()))
                    } catch let error as StorageError {
                        action = try plan.removed(.failure(error))
                    }
                case .endTransaction:
                    return .left(plan, credential)
                case .runHook, .finish:
                    throw SignOutPlan.OutOfOrder(event: "in the transaction", state: "\(action)")
                }
            }
        } catch {
            return .done(outOfOrder(error, plan: plan))
        }
    }

    /// An outcome for a plan and an executor that disagree (a defect of Latchkey's): the steps so
    /// far, and the disagreement as the reason.
    private static func outOfOrder(_ error: any Error, plan: SignOutPlan) -> AccountOutcome {
        assertionFailure("\(error)")
        return AccountOutcome(
            account: plan.account, steps: plan.steps,
            failure: SignOutError(.outOfOrder, account: plan.account, reason: "The sign-out stopped: \(error).")
        )
    }

    private static func refresh(in transaction: CredentialTransaction, provider: (any IdentityProvider)?) async
        -> Result<Token, ProviderError>
    {
        guard let provider else {
            return .failure(ProviderError(.noProviderRegistered, reason: "No provider is registered for the account."))
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

    /// Runs `hook` under its deadline, by the store's clock: past it, the hook is cancelled and
    /// its step fails (retryable).
    private func run(_ hook: SignOutHook, on credential: StoredCredential) async -> (any Error & Sendable)? {
        let clock = self.clock
        return await withTaskGroup(of: HookEnd.self) { group in
            group.addTask {
                do {
                    try await hook.run(credential)
                    return .finished(nil)
                } catch {
                    return .finished(error)
                }
            }
            group.addTask {
                do {
                    try await clock.sleep(for: hook.timeout)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            defer { group.cancelAll() }
            while let end = await group.next() {
                switch end {
                case .finished(let error): return error
                case .timedOut: return SignOutHookTimedOut(name: hook.name, timeout: hook.timeout)
                case .cancelled: continue
                }
            }
            return nil
        }
    }

    /// How a hook's run ended.
    private enum HookEnd: Sendable {
        case finished((any Error & Sendable)?)
        case timedOut
        case cancelled
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
