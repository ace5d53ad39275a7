package import Foundation

/// One account's sign-out as a state machine, in the shape of async-http-client's
/// `Transaction.StateMachine`: a private ``State``, events that return the ``Action`` to run
/// next, and an event that does not answer the action asked for refused with ``OutOfOrder``.
/// It does no I/O: the executor (``CredentialStore/signOut(_:options:)``) runs each action and
/// hands the outcome back as the next event, so the rules below are tested as a table and
/// transition by transition, without a network or a store.
///
/// The order: in the credential's transaction, a refresh when a global sign-out needs a valid
/// access token and there is none; the global sign-out (before any revocation, which could kill
/// the access token it needs; when it fails for now, the revocations are held back and follow
/// it); the revocations and the end of the provider session, at once; then, under
/// ``SignOutPolicy/serverFirst``, keeping the account when a step failed; under
/// ``SignOutPolicy/alwaysLocal``, queueing every server step that failed — the entries, their
/// expiries and the global sign-out they wait for decided here, written in one write — and
/// removing the account, unless a step could be neither sent nor queued. After the
/// transaction, with the lease released, the hooks, once the account has left this device.
package struct SignOutPlan: Sendable {
    package let account: CredentialID
    package let accountName: String?
    package let options: SignOutOptions
    /// `nil` when no provider is registered for the credential's issuer and client.
    package let globalSupport: GlobalSupport?
    /// The credential's tokens: as read, then as a refresh left them.
    package private(set) var token: Token
    /// Every step so far, in order.
    package private(set) var steps: [SignOutStep] = []
    /// When the entries to queue are made, and how.
    let queueing: Queueing
    private(set) var tokens: Tokens
    private var failure: SignOutError?
    private var state: State = .idle

    /// Where the plan is: what it asked the executor for, and so which event it waits for.
    private enum State: Sendable, Equatable {
        case idle
        case refreshing
        case signingOutGlobally
        /// Waiting for the revocations of `kinds` (and the end of the session, when asked).
        case revoking(kinds: [TokenKind], endSession: Bool)
        case queueing([OutboxEntry])
        case keeping
        case removing
        /// Waiting for the executor to leave the transaction; whether the account left this device.
        case leavingTransaction(removed: Bool)
        case runningHook(Int)
        case finished
    }

    /// A plan for `credential`, as read in its transaction. `globalSupport` is `nil` when no
    /// provider is registered for it (and is only looked at for a global sign-out).
    package init(
        for credential: StoredCredential, options: SignOutOptions, globalSupport: GlobalSupport?, queueing: Queueing
    ) {
        account = credential.id
        accountName = credential.metadata.displayName
        token = credential.token
        tokens = Tokens(credential.token, at: queueing.date)
        self.options = options
        self.globalSupport = globalSupport
        self.queueing = queueing
    }

    private var hasProvider: Bool { globalSupport != nil }
    private var globalSupported: Bool { if case .supported? = globalSupport { true } else { false } }
    /// Without a global mechanism (or when whether there is one is unknown), revoking the grant
    /// and ending the session stand in for it.
    private var fallback: Bool { options.global && !globalSupported }
    var revokes: Bool { options.revokeTokens || fallback }
    var endsSession: Bool { options.endProviderSession || fallback }

    // MARK: Events

    /// The first step.
    package mutating func start() throws(OutOfOrder) -> Action {
        try expect(.idle, "start")
        if options.global && globalSupported {
            if !tokens.accessTokenValid { return ask(.refresh, .refreshing) }
            record(.refresh, .skipped, reason: .init(.accessTokenStillValid, "the access token is still valid"))
        }
        return afterRefresh()
    }

    /// The refresh's outcome: the credential's tokens afterwards.
    package mutating func refreshed(_ result: Result<Token, ProviderError>) throws(OutOfOrder) -> Action {
        try expect(.refreshing, "refreshed")
        switch result {
        case .success(let refreshed):
            token = refreshed
            tokens = Tokens(refreshed, at: queueing.date)
            record(.refresh, .succeeded)
        case .failure(let error):
            record(
                .refresh, .failed, reason: .init(.failed, error.description), error: error, retryable: error.isRetryable
            )
        }
        return afterRefresh()
    }

    /// The global sign-out's outcome.
    package mutating func signedOutGlobally(_ result: Result<Void, ProviderError>) throws(OutOfOrder) -> Action {
        try expect(.signingOutGlobally, "signedOutGlobally")
        switch result {
        case .success:
            record(.globalSignOut, .succeeded)
        case .failure(let error):
            record(
                .globalSignOut, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
            if error.isRetryable { return holdingRevocations() }
        }
        return revocations()
    }

    /// The revocations' outcomes, kind by kind, and the end-session request's (`nil` when none
    /// was sent): a URL when the provider needs a browser to finish it.
    package mutating func revoked(_ outcomes: [TokenKind: RevocationOutcome], endSession: Result<URL?, ProviderError>?)
        throws(OutOfOrder) -> Action
    {
        guard case .revoking(let kinds, let ending) = state, (endSession != nil) == ending else {
            throw OutOfOrder(event: "revoked", state: "\(state)")
        }
        for kind in kinds { recordRevocation(kind, outcomes[kind]) }
        if let endSession { recordEndSession(endSession) }
        return decide()
    }

    /// What became of the entries ``Action/queue(_:)`` named, written in one write: `nil` when
    /// they were queued, else why they could not be.
    package mutating func queued(_ error: StorageError?) throws(OutOfOrder) -> Action {
        guard case .queueing(let entries) = state else { throw OutOfOrder(event: "queued", state: "\(state)") }
        let kinds = Set(entries.map(\.action.stepKind))
        for index in steps.indices where steps[index].status == .failed && kinds.contains(steps[index].kind) {
            if let error {
                steps[index].reason = .init(
                    .notQueued, "\(steps[index].reason?.text ?? "failed"); it could not be queued: \(error)")
            } else {
                steps[index].status = .queued
                steps[index].isRetryable = true
            }
        }
        guard let error else { return ask(.remove, .removing) }
        // A step that was neither sent nor queued must not leave with the account.
        record(
            .localRemoval, .skipped,
            reason: .init(
                .notQueued, "a server step could be neither sent nor queued; the account stays so nothing is lost"))
        failure = SignOutError(
            .revocationNotQueued, account: account,
            reason: "Still signed in as \(displayName): a server step failed and could not be queued (\(error)).",
            underlying: error, retryable: true)
        return ask(.endTransaction, .leavingTransaction(removed: false))
    }

    /// The outcome of keeping the account under ``SignOutPolicy/serverFirst``: `error` when the
    /// revoked tokens could not be dropped (they are dead at the provider either way).
    package mutating func kept(_ error: StorageError?) throws(OutOfOrder) -> Action {
        try expect(.keeping, "kept")
        record(.localRemoval, .skipped, reason: .init(.serverStepFailed, "a server step failed; still signed in"))
        let failed = steps.first { $0.status == .failed }
        failure = SignOutError(
            .serverStepFailed, account: account,
            reason: "Still signed in as \(displayName): \(failed?.kind.description ?? "a server step") failed.",
            underlying: failed?.error, retryable: failed?.isRetryable ?? false)
        return ask(.endTransaction, .leavingTransaction(removed: false))
    }

    /// The outcome of removing the account: whether there was one to remove.
    package mutating func removed(_ result: Result<Bool, StorageError>) throws(OutOfOrder) -> Action {
        try expect(.removing, "removed")
        switch result {
        case .success(true):
            record(.localRemoval, .succeeded)
        case .success(false):
            record(.localRemoval, .skipped, reason: .init(.alreadyRemoved, "already removed from this device"))
        case .failure(let error):
            record(
                .localRemoval, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
            failure = SignOutError(
                .localRemovalFailed, account: account,
                reason: "The credential could not be removed from this device: \(error)", underlying: error,
                retryable: error.isRetryable)
            return ask(.endTransaction, .leavingTransaction(removed: false))
        }
        return ask(.endTransaction, .leavingTransaction(removed: true))
    }

    /// The executor left the transaction (the lease is released): the hooks run now, once the
    /// account has left this device; while it is still signed in here they do not run.
    package mutating func transactionEnded() throws(OutOfOrder) -> Action {
        guard case .leavingTransaction(let removed) = state else {
            throw OutOfOrder(event: "transactionEnded", state: "\(state)")
        }
        guard removed else {
            for hook in options.hooks {
                record(
                    .hook(hook.name), .skipped,
                    reason: .init(.stillSignedIn, "not run: still signed in on this device"))
            }
            return finish()
        }
        return hook(0)
    }

    /// A hook's outcome: `error` is what it threw (or why it did not finish in time).
    package mutating func ranHook(_ index: Int, error: (any Error & Sendable)?) throws(OutOfOrder) -> Action {
        try expect(.runningHook(index), "ranHook")
        let name = options.hooks[index].name
        if let error {
            // The hook's own error, kept as it is; it says whether a retry can help.
            record(
                .hook(name), .failed, reason: .init(.hookFailed, "\(error)"), error: error,
                retryable: (error as? any RetryableError)?.isRetryable ?? false)
        } else {
            record(.hook(name), .succeeded)
        }
        return hook(index + 1)
    }

    /// The account's result so far: every step, and why it is still signed in, if it is.
    package var outcome: AccountSignOut { AccountSignOut(account: account, steps: steps, failure: failure) }

    // MARK: Deciding

    private mutating func afterRefresh() -> Action {
        guard options.global else { return revocations() }
        switch globalSupport {
        case nil:
            recordNoProvider(.globalSignOut)
        case .unknown(let error)?:
            record(
                .globalSignOut, .failed,
                reason: .init(
                    .supportUnknown,
                    "whether the provider has a global sign-out could not be found out (\(error)); fell back to revoking the grant and ending the provider session"
                ), error: error, retryable: error.isRetryable)
        case .unsupported?:
            record(
                .globalSignOut, .skipped,
                reason: .init(
                    .unsupported,
                    "unsupported by the provider; fell back to revoking the grant and ending the provider session"))
        case .supported?:
            guard tokens.accessTokenValid else {
                record(
                    .globalSignOut, .failed, reason: .init(.noAccessToken, "no valid access token to sign out with"),
                    retryable: true)
                return revocations()
            }
            return ask(.globalSignOut, .signingOutGlobally)
        }
        return revocations()
    }

    private mutating func revocations() -> Action {
        let kinds = revokes ? tokens.revocable : []
        guard hasProvider else {
            for kind in kinds { recordNoProvider(.revoke(kind)) }
            if endsSession { recordNoProvider(.endSession) }
            return decide()
        }
        guard !kinds.isEmpty || endsSession else { return decide() }
        return ask(
            .revokeAndEndSession(revoke: kinds, endSession: endsSession),
            .revoking(kinds: kinds, endSession: endsSession))
    }

    /// After a global sign-out that may go through later: revoking now would kill the tokens it
    /// needs then. Under always-local the revocations are queued after it; under server-first
    /// the account keeps them, to sign out with next time. The end of the session goes now.
    private mutating func holdingRevocations() -> Action {
        let held = SignOutStep.Reason(
            .heldForGlobalSignOut, "not sent: the global sign-out that failed needs the tokens alive; it goes first")
        for kind in revokes ? tokens.revocable : [] {
            if options.policy == .serverFirst {
                record(.revoke(kind), .skipped, reason: held)
            } else {
                record(.revoke(kind), .failed, reason: held, retryable: true)
            }
        }
        guard hasProvider, endsSession else { return decide() }
        return ask(.revokeAndEndSession(revoke: [], endSession: true), .revoking(kinds: [], endSession: true))
    }

    /// After every server step was tried: keep the account, or queue what failed and remove it.
    private mutating func decide() -> Action {
        let failed = steps.contains { $0.status == .failed }
        if options.policy == .serverFirst && failed {
            return ask(.keep(droppingRevoked: revokedKinds), .keeping)
        }
        let entries = entriesToQueue()
        guard !entries.isEmpty else { return ask(.remove, .removing) }
        return ask(.queue(entries), .queueing(entries))
    }

    private mutating func hook(_ index: Int) -> Action {
        guard index < options.hooks.count else { return finish() }
        return ask(.runHook(index), .runningHook(index))
    }

    private mutating func finish() -> Action {
        state = .finished
        return .finish(outcome)
    }

    // MARK: Recording

    private var displayName: String { accountName ?? account.rawValue }

    private var revokedKinds: Set<TokenKind> {
        Set(
            steps.compactMap { step -> TokenKind? in
                if case .revoke(let kind) = step.kind, step.status == .succeeded { return kind }
                return nil
            })
    }

    /// Asks for `action`, waiting in `next` for its outcome.
    private mutating func ask(_ action: Action, _ next: State) -> Action {
        state = next
        return action
    }

    private func expect(_ expected: State, _ event: String) throws(OutOfOrder) {
        guard state == expected else { throw OutOfOrder(event: event, state: "\(state)") }
    }

    mutating func record(
        _ kind: SignOutStep.Kind, _ status: SignOutStep.Status, reason: SignOutStep.Reason? = nil,
        error: (any Error & Sendable)? = nil, retryable: Bool = false, browserURL: URL? = nil
    ) {
        steps.append(
            SignOutStep(
                account: account, accountName: accountName, kind, status, reason: reason, error: error,
                retryable: retryable, browserURL: browserURL))
    }

    private mutating func recordNoProvider(_ kind: SignOutStep.Kind) {
        record(
            kind, .failed,
            reason: .init(.noProvider, "no provider is registered for the account; register it with the store"),
            retryable: true)
    }
}

/// One account's sign-out: its steps, and why it is still signed in, if it is.
package struct AccountSignOut: Sendable {
    package var account: CredentialID
    package var steps: [SignOutStep]
    package var failure: SignOutError?
}
