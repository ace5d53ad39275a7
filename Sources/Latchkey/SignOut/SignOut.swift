import Foundation
import Logging
import Tracing

extension CredentialStore {
    /// Signs accounts out: on this device, or on every device, ending the provider session if
    /// asked, and reports every step.
    ///
    /// For each account, in this order: when a global sign-out needs a valid access token and
    /// it has expired, refresh first; then the global sign-out (before any revocation, which
    /// could kill the access token it needs); then the revocations and the end of the provider
    /// session, all at once; then the hooks; then local removal.
    /// Accounts are signed out in parallel. The provider of each credential must have been
    /// registered with ``register(_:)``.
    ///
    /// With ``SignOutPolicy/alwaysLocal`` a revocation that failed goes to the revocation
    /// outbox (``drainOutbox(_:)`` retries it) and the result is `.partial`. With
    /// ``SignOutPolicy/serverFirst`` a failed server step leaves the account signed in and the
    /// result is `.failed`.
    public func signOut(_ scope: SignOutScope = .current, options: SignOutOptions = .local) async -> SignOutResult {
        let started = ContinuousClock.now
        let result = await withSpan(LatchkeyTelemetry.SpanName.signOut) { span in
            span.attributes["latchkey.sign_out.scope"] = options.global ? "global" : "device"
            let result = await signOutUntraced(scope, options: options)
            span.attributes["latchkey.sign_out.outcome"] = result.outcomeWord
            if case .failed = result { span.setStatus(SpanStatus(code: .error)) }
            return result
        }
        Telemetry.signOut(global: options.global, result, after: ContinuousClock.now - started)
        return result
    }

    private func signOutUntraced(_ scope: SignOutScope, options: SignOutOptions) async -> SignOutResult {
        // A sign-out cancelled before it began (the user pressed Cancel) changes nothing.
        if Task.isCancelled {
            return .failed(SignOutError(.cancelled, reason: "The sign-out was cancelled; nothing changed."), [])
        }
        let credentials: [StoredCredential]
        do {
            switch scope {
            case .current:
                credentials = try await self.default.map { [$0] } ?? []
            case .account(let id):
                credentials = try await credential(for: id).map { [$0] } ?? []
            case .all:
                credentials = try await all()
            }
        } catch {
            return .failed(
                SignOutError(
                    .storageFailed, reason: "The credential store could not be read: \(error)", underlying: error,
                    retryable: error.isRetryable), [])
        }
        if credentials.isEmpty, scope != .all {
            return .failed(
                SignOutError(.noSuchAccount, reason: "There is no such account signed in on this device."), [])
        }
        var outcomes: [AccountSignOut] = []
        await withTaskGroup(of: AccountSignOut.self) { group in
            for credential in credentials {
                group.addTask { await self.signOutAccount(credential, options: options) }
            }
            for await outcome in group { outcomes.append(outcome) }
        }
        // Report in the store's order, whatever order the accounts finished in.
        let order = Dictionary(uniqueKeysWithValues: credentials.enumerated().map { ($1.id, $0) })
        outcomes.sort { order[$0.account, default: 0] < order[$1.account, default: 0] }
        let steps = outcomes.flatMap(\.steps)
        for step in steps {
            var metadata: Logger.Metadata = [
                "credential": "\(step.account)", "step": "\(step.kind)", "status": "\(step.status.rawValue)",
            ]
            if let reason = step.reason { metadata["reason"] = "\(reason.code): \(reason)" }
            if let error = step.error { metadata["error"] = "\(error)" }
            logger.debug("sign-out step", metadata: metadata)
        }
        if let failure = outcomes.compactMap(\.failure).first { return .failed(failure, steps) }
        // Damaged records cannot be signed out (their tokens cannot be read); say so.
        if scope == .all, let damaged = try? await damagedRecords().filter({ $0.kind == .credential }),
            !damaged.isEmpty
        {
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

    private struct AccountSignOut: Sendable {
        var account: CredentialID
        var steps: [SignOutStep]
        var failure: SignOutError?
    }

    /// What the steps before the lease decided.
    private struct Plan: Sendable {
        var provider: (any IdentityProvider)?
        var options: SignOutOptions
        /// Whether the provider has a global sign-out: `nil` when that could not be found out.
        var globalSupport: Result<Bool, ProviderError>?
        var globalSupported: Bool { (try? globalSupport?.get()) == true }
        /// Without a global mechanism (or when it is unknown), revoking the grant and ending
        /// the session is the fallback.
        var fallback: Bool { options.global && !globalSupported }
        var revoke: Bool { options.revokeTokens || fallback }
        var endSession: Bool { options.endProviderSession || fallback }
    }

    private func signOutAccount(_ snapshot: StoredCredential, options: SignOutOptions) async -> AccountSignOut {
        var steps: [SignOutStep] = []
        var plan = Plan(provider: provider(for: snapshot.token.provider), options: options)
        if options.global, let provider = plan.provider {
            do {
                plan.globalSupport = .success(try await provider.supportsGlobalSignOut())
            } catch {
                plan.globalSupport = .failure(error)
            }
        }

        // 1. A global sign-out needs a valid access token: refresh an expired one first, through
        // the credential's own refresh (single-flight, under the refresh lease, stored at once).
        if options.global, plan.globalSupported, let provider = plan.provider {
            if snapshot.token.accessToken == nil || snapshot.token.isExpired(at: now()) {
                do throws(ProviderError) {
                    _ = try await credential(snapshot.id, provider: provider).accessToken(minimumValidity: 0)
                    steps.append(SignOutStep(snapshot, .refresh, .succeeded))
                } catch {
                    steps.append(
                        SignOutStep(
                            snapshot, .refresh, .failed, reason: .init(.failed, error.description), error: error,
                            retryable: error.isRetryable))
                }
            } else {
                steps.append(
                    SignOutStep(
                        snapshot, .refresh, .skipped,
                        reason: .init(.accessTokenStillValid, "the access token is still valid")))
            }
        }

        // 2. The rest holds the refresh lease: no refresh interleaves, so the tokens revoked are
        // the tokens removed.
        let earlier = steps
        let decided = plan
        do {
            return try await withRefreshLease(snapshot.id) {
                await self.signOutHoldingLease(snapshot, plan: decided, steps: earlier)
            }
        } catch {
            return AccountSignOut(
                account: snapshot.id, steps: steps,
                failure: SignOutError(
                    .storageFailed, account: snapshot.id,
                    reason: "The credential store failed before the sign-out began; still signed in: \(error)",
                    underlying: error, retryable: error.isRetryable))
        }
    }

    private func signOutHoldingLease(_ snapshot: StoredCredential, plan: Plan, steps earlier: [SignOutStep]) async
        -> AccountSignOut
    {
        var steps = earlier
        let credential: StoredCredential
        do {
            guard let current = try await self.credential(for: snapshot.id) else {
                steps.append(
                    SignOutStep(
                        snapshot, .localRemoval, .skipped,
                        reason: .init(.alreadyRemoved, "already removed from this device")))
                return AccountSignOut(account: snapshot.id, steps: steps)
            }
            credential = current
        } catch {
            return AccountSignOut(
                account: snapshot.id, steps: steps,
                failure: SignOutError(
                    .storageFailed, account: snapshot.id,
                    reason: "The credential store could not be read; still signed in: \(error)", underlying: error,
                    retryable: error.isRetryable))
        }
        let token = credential.token
        let provider = plan.provider
        let options = plan.options

        // 2. The global sign-out first: it needs the access token, which a revocation of the
        // access token (or of the grant) running at the same time could kill.
        if options.global {
            let accessToken = token.isExpired(at: now()) ? nil : token.accessToken
            steps.append(await globalSignOutStep(credential, plan: plan, accessToken: accessToken))
        }

        // 3. Revocations and the end of the provider session, all at once.
        async let revocationSteps = revocationSteps(credential, provider: provider, enabled: plan.revoke)
        async let sessionStep = endSessionStep(credential, provider: provider, plan: plan)
        steps += await revocationSteps
        if let step = await sessionStep { steps.append(step) }

        // 4. Hooks, in order.
        for hook in options.hooks {
            do {
                try await hook.run(credential)
                steps.append(SignOutStep(credential, .hook(hook.name), .succeeded))
            } catch {
                steps.append(
                    SignOutStep(
                        credential, .hook(hook.name), .failed, reason: .init(.hookFailed, "\(error)"),
                        error: SendableError(error),
                        retryable: true))
            }
        }

        let revokedKinds = Set(
            steps.compactMap { step -> TokenKind? in
                if case .revoke(let kind) = step.kind, step.status == .succeeded { return kind }
                return nil
            })
        let serverFailed = steps.contains { $0.status == .failed }

        // 5a. Server first: a failed server step leaves the account signed in.
        if options.policy == .serverFirst && serverFailed {
            var remaining = token
            for kind in revokedKinds { remaining.discard(kind) }
            if remaining.isUsable(at: now()) {
                do {
                    // Only the values that were revoked leave the store.
                    try await update(credential.id) { stored in
                        for kind in revokedKinds where stored.token.value(of: kind) == token.value(of: kind) {
                            stored.token.discard(kind)
                        }
                    }
                } catch {
                    logger.debug("revoked tokens could not be dropped", metadata: ["error": "\(error)"])
                }
            }
            steps.append(
                SignOutStep(
                    credential, .localRemoval, .skipped,
                    reason: .init(.serverStepFailed, "a server step failed; still signed in")))
            let failed = steps.first { $0.status == .failed }
            return AccountSignOut(
                account: credential.id, steps: steps,
                failure: SignOutError(
                    .serverStepFailed, account: credential.id,
                    reason:
                        "Still signed in as \(credential.metadata.displayName ?? credential.id.rawValue): \(failed?.kind.description ?? "a server step") failed.",
                    underlying: failed?.error, retryable: failed?.isRetryable ?? false))
        }

        // 5b. Always local: failed revocations wait in the outbox, never in the credential store.
        var notQueued: StorageError?
        for index in steps.indices {
            guard case .revoke(let kind) = steps[index].kind, steps[index].status == .failed,
                let value = token.value(of: kind)
            else { continue }
            let entry = OutboxEntry(
                provider: token.provider, kind: kind, token: value, account: credential.metadata.displayName,
                tokenExpiresAt: token.expiry(of: kind), createdAt: now(), attempts: 1,
                nextAttemptAt: now().addingTimeInterval(
                    OutboxBackoff.default.delay(
                        afterAttempts: 1, retryAfter: (steps[index].error as? ProviderError)?.retryAfter)),
                lastError: steps[index].reason?.text)
            do {
                try await outbox.enqueue(entry, limit: outboxLimit)
                steps[index].status = .queued
                steps[index].isRetryable = true
            } catch {
                steps[index].reason = .init(
                    .notQueued, "\(steps[index].reason?.text ?? "failed"); it could not be queued: \(error)")
                notQueued = notQueued ?? error
            }
        }

        // A token that was neither revoked nor queued must not leave with the credential.
        if let notQueued {
            steps.append(
                SignOutStep(
                    credential, .localRemoval, .skipped,
                    reason: .init(
                        .notQueued,
                        "a revocation could be neither sent nor queued; the account stays so its token is not lost"))
            )
            return AccountSignOut(
                account: credential.id, steps: steps,
                failure: SignOutError(
                    .revocationNotQueued, account: credential.id,
                    reason:
                        "Still signed in as \(credential.metadata.displayName ?? credential.id.rawValue): a revocation failed and could not be queued (\(notQueued)).",
                    underlying: notQueued, retryable: true))
        }

        // 6. Local removal.
        do {
            try await remove(credential.id)
            steps.append(SignOutStep(credential, .localRemoval, .succeeded))
            return AccountSignOut(account: credential.id, steps: steps, failure: nil)
        } catch {
            steps.append(
                SignOutStep(
                    credential, .localRemoval, .failed, reason: .init(.failed, error.description), error: error,
                    retryable: error.isRetryable))
            return AccountSignOut(
                account: credential.id, steps: steps,
                failure: SignOutError(
                    .localRemovalFailed, account: credential.id,
                    reason: "The credential could not be removed from this device: \(error)", underlying: error,
                    retryable: error.isRetryable))
        }
    }

    /// One step per token the credential holds, through the shared revocation fan-out. A
    /// session token's step is its logout (``SignOutStep/Kind/sessionLogout``): ending the
    /// session revokes no OAuth token, and revoking them ends no session, so both are sent.
    private func revocationSteps(_ credential: StoredCredential, provider: (any IdentityProvider)?, enabled: Bool)
        async -> [SignOutStep]
    {
        guard enabled else { return [] }
        let kinds = [TokenKind.accessToken, .refreshToken, .deviceSecret, .sessionToken].filter {
            credential.token.value(of: $0) != nil
        }
        guard let provider else { return kinds.map { Self.noProvider(credential, .revoke($0)) } }
        let outcomes = await RevocationFanOut.revoke(kinds, of: credential.token, at: provider)
        return kinds.compactMap { kind -> SignOutStep? in
            switch outcomes[kind] {
            case .revoked?:
                return SignOutStep(credential, .revoke(kind), .succeeded)
            case .endsWithRefreshToken?:
                return SignOutStep(
                    credential, .revoke(kind), .skipped,
                    reason: .init(.endsWithRefreshToken, "the provider revokes it together with the refresh token"))
            case .failed(let error)?:
                return SignOutStep(
                    credential, .revoke(kind), .failed, reason: .init(.failed, error.description), error: error,
                    retryable: error.isRetryable)
            case .notPresent?, nil:
                return nil
            }
        }
    }

    private func endSessionStep(_ credential: StoredCredential, provider: (any IdentityProvider)?, plan: Plan) async
        -> SignOutStep?
    {
        guard plan.endSession else { return nil }
        guard let provider else { return Self.noProvider(credential, .endSession) }
        do throws(ProviderError) {
            if let url = try await provider.endSession(idToken: credential.token.idToken) {
                return SignOutStep(
                    credential, .endSession, .skipped,
                    reason: .init(.needsBrowser, "the provider needs a browser to end its session"),
                    browserURL: url)
            }
            return SignOutStep(credential, .endSession, .succeeded)
        } catch {
            if error.code == .unsupported && !plan.options.endProviderSession {
                return SignOutStep(
                    credential, .endSession, .skipped,
                    reason: .init(.noEndSessionEndpoint, "the provider has no end-session endpoint"))
            }
            return SignOutStep(
                credential, .endSession, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
        }
    }

    private func globalSignOutStep(_ credential: StoredCredential, plan: Plan, accessToken: String?) async
        -> SignOutStep
    {
        guard let provider = plan.provider else { return Self.noProvider(credential, .globalSignOut) }
        switch plan.globalSupport {
        case .failure(let error)?:
            return SignOutStep(
                credential, .globalSignOut, .failed,
                reason: .init(
                    .supportUnknown,
                    "whether the provider has a global sign-out could not be found out (\(error)); fell back to revoking the grant and ending the provider session"
                ),
                error: error, retryable: error.isRetryable)
        case .success(false)?, nil:
            return SignOutStep(
                credential, .globalSignOut, .skipped,
                reason: .init(
                    .unsupported,
                    "unsupported by the provider; fell back to revoking the grant and ending the provider session"))
        case .success(true)?:
            break
        }
        guard let accessToken else {
            return SignOutStep(
                credential, .globalSignOut, .failed,
                reason: .init(.noAccessToken, "no valid access token to sign out with"), retryable: true)
        }
        do throws(ProviderError) {
            try await provider.globalSignOut(accessToken: accessToken)
            return SignOutStep(credential, .globalSignOut, .succeeded)
        } catch {
            return SignOutStep(
                credential, .globalSignOut, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
        }
    }

    private static func noProvider(_ credential: StoredCredential, _ kind: SignOutStep.Kind) -> SignOutStep {
        SignOutStep(
            credential, kind, .failed,
            reason: .init(
                .noProvider, "no provider is registered for \(credential.token.provider); register it with the store"),
            retryable: true)
    }
}

/// An error of a hook, made sendable by keeping its description.
struct SendableError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = "\(error)" }
}
