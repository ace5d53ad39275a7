package import Foundation

/// One account's sign-out as a pure value: from what is known — the options and policy, what
/// the provider can do, what the credential holds, and each step's outcome as it comes — it
/// decides the next step and, at the end, the account's result. It does no I/O: the executor
/// (``CredentialStore/signOut(_:options:)``) runs each step in the credential's transaction
/// and hands the outcome back, so the rules below are tested as a table, without a network or
/// a store.
///
/// The order: a refresh when a global sign-out needs a valid access token and there is none;
/// the global sign-out (before any revocation, which could kill the access token it needs; when
/// it fails for now, the revocations are held back and follow it);
/// the revocations and the end of the provider session, at once; the hooks; then, under
/// ``SignOutPolicy/serverFirst``, keeping the account when a step failed; under
/// ``SignOutPolicy/alwaysLocal``, queueing every server step that failed (a queued revocation or
/// end-session waits for a queued global sign-out of the same account) and removing the account,
/// unless a step could be neither sent nor queued.
package struct SignOutPlan: Sendable {
    package let account: CredentialID
    package let accountName: String?
    package let options: SignOutOptions
    /// `nil` when no provider is registered for the credential's issuer and client.
    package let globalSupport: GlobalSupport?
    package private(set) var tokens: Tokens
    /// Every step so far, in order.
    package private(set) var steps: [SignOutStep] = []
    private var failure: SignOutError?

    /// A plan for `account`. `globalSupport` is `nil` when no provider is registered for it (and
    /// is only looked at for a global sign-out).
    package init(
        account: CredentialID, accountName: String?, options: SignOutOptions, globalSupport: GlobalSupport?,
        tokens: Tokens
    ) {
        self.account = account
        self.accountName = accountName
        self.options = options
        self.globalSupport = globalSupport
        self.tokens = tokens
    }

    private var hasProvider: Bool { globalSupport != nil }
    private var globalSupported: Bool { if case .supported? = globalSupport { true } else { false } }
    /// Without a global mechanism (or when whether there is one is unknown), revoking the grant
    /// and ending the session stand in for it.
    private var fallback: Bool { options.global && !globalSupported }
    private var revokes: Bool { options.revokeTokens || fallback }
    private var endsSession: Bool { options.endProviderSession || fallback }

    // MARK: Deciding

    /// The first step.
    package mutating func start() -> Action {
        if options.global && globalSupported {
            if !tokens.accessTokenValid { return .refresh }
            record(.refresh, .skipped, reason: .init(.accessTokenStillValid, "the access token is still valid"))
        }
        return afterRefresh()
    }

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
            return .globalSignOut
        }
        return revocations()
    }

    private mutating func revocations() -> Action {
        let kinds = revokes ? tokens.revocable : []
        guard hasProvider else {
            for kind in kinds { recordNoProvider(.revoke(kind)) }
            if endsSession { recordNoProvider(.endSession) }
            return hook(0)
        }
        guard !kinds.isEmpty || endsSession else { return hook(0) }
        return .revokeAndEndSession(revoke: kinds, endSession: endsSession)
    }

    private mutating func hook(_ index: Int) -> Action {
        guard index < options.hooks.count else { return decide() }
        return .runHook(index)
    }

    /// After every step was tried: keep the account, or queue what failed and remove it.
    private mutating func decide() -> Action {
        let failed = steps.contains { $0.status == .failed }
        if options.policy == .serverFirst && failed { return .keep(droppingRevoked: revokedKinds) }
        let queue = queueable
        return queue.isEmpty ? .remove : .queue(queue)
    }

    /// The failed server steps that can be sent later. A global sign-out needs a token to
    /// authenticate with; the others need nothing they do not have.
    private var queueable: [QueuedStep] {
        let global = steps.contains {
            $0.kind == .globalSignOut && $0.status == .failed && (tokens.hasAccessToken || tokens.hasRefreshToken)
        }
        return steps.compactMap { step -> QueuedStep? in
            guard step.status == .failed else { return nil }
            let action: OutboxEntry.Action
            switch step.kind {
            case .globalSignOut where global: action = .globalSignOut
            case .revoke(let kind): action = .revoke(kind)
            case .endSession: action = .endSession
            default: return nil
            }
            return QueuedStep(
                action: action, waitsForGlobalSignOut: global && action != .globalSignOut,
                lastError: step.reason?.text, retryAfter: (step.error as? ProviderError)?.retryAfter,
                failedForGood: !step.isRetryable)
        }
    }

    private var revokedKinds: Set<TokenKind> {
        Set(
            steps.compactMap { step -> TokenKind? in
                if case .revoke(let kind) = step.kind, step.status == .succeeded { return kind }
                return nil
            })
    }

    // MARK: Outcomes

    /// The refresh's outcome, and what the credential holds afterwards.
    package mutating func refreshed(_ result: Result<Tokens, ProviderError>) -> Action {
        switch result {
        case .success(let refreshed):
            tokens = refreshed
            record(.refresh, .succeeded)
        case .failure(let error):
            record(
                .refresh, .failed, reason: .init(.failed, error.description), error: error, retryable: error.isRetryable
            )
        }
        return afterRefresh()
    }

    /// The global sign-out's outcome.
    package mutating func signedOutGlobally(_ result: Result<Void, ProviderError>) -> Action {
        switch result {
        case .success: record(.globalSignOut, .succeeded)
        case .failure(let error):
            record(
                .globalSignOut, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
            if error.isRetryable { return holdingRevocations() }
        }
        return revocations()
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
        guard hasProvider, endsSession else { return hook(0) }
        return .revokeAndEndSession(revoke: [], endSession: true)
    }

    /// The revocations' outcomes, kind by kind, and the end-session request's (`nil` when none
    /// was sent): a URL when the provider needs a browser to finish it.
    package mutating func revoked(_ outcomes: [TokenKind: RevocationOutcome], endSession: Result<URL?, ProviderError>?)
        -> Action
    {
        for kind in revokes ? tokens.revocable : [] where !steps.contains(where: { $0.kind == .revoke(kind) }) {
            switch outcomes[kind] {
            case .revoked?:
                record(.revoke(kind), .succeeded)
            case .endsWithRefreshToken?:
                record(
                    .revoke(kind), .skipped,
                    reason: .init(.endsWithRefreshToken, "the provider revokes it together with the refresh token"))
            case .failed(let error)?:
                record(
                    .revoke(kind), .failed, reason: .init(.failed, error.description), error: error,
                    retryable: error.isRetryable)
            case .notPresent?, nil:
                break
            }
        }
        switch endSession {
        case .success(let url?)?:
            record(
                .endSession, .skipped, reason: .init(.needsBrowser, "the provider needs a browser to end its session"),
                browserURL: url)
        case .success(nil)?:
            record(.endSession, .succeeded)
        case .failure(let error)? where error.code == .unsupported && !options.endProviderSession:
            record(
                .endSession, .skipped, reason: .init(.noEndSessionEndpoint, "the provider has no end-session endpoint"))
        case .failure(let error)?:
            record(
                .endSession, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
        case nil:
            break
        }
        return hook(0)
    }

    /// A hook's outcome: `error` is what it threw.
    package mutating func ranHook(_ index: Int, error: (any Error & Sendable)?) -> Action {
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

    /// What became of each step ``Action/queue(_:)`` named: `nil` when it was queued, else why
    /// it could not be.
    package mutating func queued(_ results: [(QueuedStep, StorageError?)]) -> Action {
        var notQueued: StorageError?
        for (step, result) in results {
            guard let index = steps.firstIndex(where: { $0.status == .failed && $0.kind == step.action.stepKind })
            else { continue }
            if let result {
                steps[index].reason = .init(
                    .notQueued, "\(steps[index].reason?.text ?? "failed"); it could not be queued: \(result)")
                notQueued = notQueued ?? result
            } else {
                steps[index].status = .queued
                steps[index].isRetryable = true
            }
        }
        guard let notQueued else { return .remove }
        // A step that was neither sent nor queued must not leave with the account.
        record(
            .localRemoval, .skipped,
            reason: .init(
                .notQueued, "a server step could be neither sent nor queued; the account stays so nothing is lost"))
        return fail(
            SignOutError(
                .revocationNotQueued, account: account,
                reason:
                    "Still signed in as \(displayName): a server step failed and could not be queued (\(notQueued)).",
                underlying: notQueued, retryable: true))
    }

    /// The outcome of keeping the account under ``SignOutPolicy/serverFirst``: `error` when the
    /// revoked tokens could not be dropped (they are dead at the provider either way).
    package mutating func kept(_ error: StorageError?) -> Action {
        record(.localRemoval, .skipped, reason: .init(.serverStepFailed, "a server step failed; still signed in"))
        let failed = steps.first { $0.status == .failed }
        return fail(
            SignOutError(
                .serverStepFailed, account: account,
                reason: "Still signed in as \(displayName): \(failed?.kind.description ?? "a server step") failed.",
                underlying: failed?.error, retryable: failed?.isRetryable ?? false))
    }

    /// The outcome of removing the account: whether there was one to remove.
    package mutating func removed(_ result: Result<Bool, StorageError>) -> Action {
        switch result {
        case .success(true):
            record(.localRemoval, .succeeded)
        case .success(false):
            record(.localRemoval, .skipped, reason: .init(.alreadyRemoved, "already removed from this device"))
        case .failure(let error):
            record(
                .localRemoval, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
            return fail(
                SignOutError(
                    .localRemovalFailed, account: account,
                    reason: "The credential could not be removed from this device: \(error)", underlying: error,
                    retryable: error.isRetryable))
        }
        return .finish(outcome)
    }

    /// The account's result so far: every step, and why it is still signed in, if it is.
    package var outcome: AccountSignOut { AccountSignOut(account: account, steps: steps, failure: failure) }

    // MARK: Recording

    private var displayName: String { accountName ?? account.rawValue }

    private mutating func fail(_ error: SignOutError) -> Action {
        failure = error
        return .finish(outcome)
    }

    private mutating func record(
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

extension OutboxEntry.Action {
    /// The sign-out step this action performs.
    var stepKind: SignOutStep.Kind {
        switch self {
        case .globalSignOut: .globalSignOut
        case .endSession: .endSession
        default: revokedKind.map(SignOutStep.Kind.revoke) ?? .globalSignOut
        }
    }
}
