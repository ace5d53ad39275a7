import Foundation
import Logging

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
        // A sign-out cancelled before it began (the user pressed Cancel) changes nothing.
        if Task.isCancelled {
            return .failed(SignOutError(reason: "The sign-out was cancelled; nothing changed."), [])
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
                SignOutError(reason: "The credential store could not be read: \(error)", underlying: error), [])
        }
        if credentials.isEmpty, scope != .all {
            return .failed(SignOutError(reason: "There is no such account signed in on this device."), [])
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
            if let reason = step.reason { metadata["reason"] = "\(reason)" }
            if let error = step.error { metadata["error"] = "\(error)" }
            logger.debug("sign-out step", metadata: metadata)
        }
        if let failure = outcomes.compactMap(\.failure).first { return .failed(failure, steps) }
        let incomplete = steps.contains { $0.status == .failed || $0.status == .queued }
        return incomplete ? .partial(steps) : .complete(steps)
    }

    private struct AccountSignOut: Sendable {
        var account: CredentialID
        var steps: [SignOutStep]
        var failure: SignOutError?
    }

    private func signOutAccount(_ credential: StoredCredential, options: SignOutOptions) async -> AccountSignOut {
        var steps: [SignOutStep] = []
        var token = credential.token
        let provider = provider(for: token.provider)
        let globalSupported = await provider?.supportsGlobalSignOut() ?? false
        // Without a global mechanism, revoking the grant and ending the session is the fallback.
        let fallback = options.global && !globalSupported
        let revoke = options.revokeTokens || fallback
        let endSession = options.endProviderSession || fallback

        // 1. A global sign-out needs a valid access token: refresh an expired one first.
        var accessTokenForGlobal = token.accessToken
        if options.global, globalSupported, let provider {
            if token.accessToken == nil || token.isExpired(at: now()) {
                do throws(ProviderError) {
                    token = try await provider.refresh(token)
                    _ = try? await update(credential.id, token: token)
                    accessTokenForGlobal = token.accessToken
                    steps.append(SignOutStep(credential, .refresh, .succeeded))
                } catch {
                    accessTokenForGlobal = nil
                    steps.append(
                        SignOutStep(
                            credential, .refresh, .failed, reason: error.description, error: error,
                            retryable: error.isRetryable))
                }
            } else {
                steps.append(SignOutStep(credential, .refresh, .skipped, reason: "the access token is still valid"))
            }
        }

        // 2. The global sign-out first: it needs the access token, which a revocation of the
        // access token (or of the grant) running at the same time could kill.
        let current = token
        let accessToken = accessTokenForGlobal
        if options.global {
            steps.append(
                await globalSignOutStep(
                    credential, provider: provider, supported: globalSupported, accessToken: accessToken))
        }

        // 3. Revocations and the end of the provider session, all at once.
        let serverSteps = await withTaskGroup(of: [SignOutStep].self) { group -> [SignOutStep] in
            if revoke {
                for kind in [TokenKind.accessToken, .refreshToken, .deviceSecret] {
                    guard let value = current.value(of: kind) else { continue }
                    group.addTask {
                        guard let provider else { return [Self.noProvider(credential, .revoke(kind))] }
                        guard provider.revocableKinds.contains(kind) else {
                            return [
                                SignOutStep(
                                    credential, .revoke(kind), .skipped,
                                    reason: "the provider revokes it together with the refresh token")
                            ]
                        }
                        do throws(ProviderError) {
                            try await provider.revoke(value, kind: kind)
                            return [SignOutStep(credential, .revoke(kind), .succeeded)]
                        } catch {
                            return [
                                SignOutStep(
                                    credential, .revoke(kind), .failed, reason: error.description, error: error,
                                    retryable: error.isRetryable)
                            ]
                        }
                    }
                }
            }
            if endSession {
                group.addTask {
                    guard let provider else { return [Self.noProvider(credential, .endSession)] }
                    do throws(ProviderError) {
                        if let url = try await provider.endSession(idToken: current.idToken) {
                            return [
                                SignOutStep(
                                    credential, .endSession, .skipped,
                                    reason: "the provider needs a browser to end its session",
                                    browserURL: url)
                            ]
                        }
                        return [SignOutStep(credential, .endSession, .succeeded)]
                    } catch {
                        if error.code == .unsupported && !options.endProviderSession {
                            return [
                                SignOutStep(
                                    credential, .endSession, .skipped,
                                    reason: "the provider has no end-session endpoint")
                            ]
                        }
                        return [
                            SignOutStep(
                                credential, .endSession, .failed, reason: error.description, error: error,
                                retryable: error.isRetryable)
                        ]
                    }
                }
            }
            var collected: [SignOutStep] = []
            for await steps in group { collected += steps }
            return collected.sorted { Self.rank($0.kind) < Self.rank($1.kind) }
        }
        steps += serverSteps

        // 4. Hooks, in order.
        for hook in options.hooks {
            do {
                try await hook.run(credential)
                steps.append(SignOutStep(credential, .hook(hook.name), .succeeded))
            } catch {
                steps.append(
                    SignOutStep(
                        credential, .hook(hook.name), .failed, reason: "\(error)", error: SendableError(error),
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
                _ = try? await update(credential.id, token: remaining)
            }
            steps.append(
                SignOutStep(credential, .localRemoval, .skipped, reason: "a server step failed; still signed in"))
            let failed = steps.first { $0.status == .failed }
            return AccountSignOut(
                account: credential.id, steps: steps,
                failure: SignOutError(
                    account: credential.id,
                    reason:
                        "Still signed in as \(credential.metadata.displayName ?? credential.id.rawValue): \(failed?.kind.description ?? "a server step") failed.",
                    underlying: failed?.error))
        }

        // 5b. Always local: failed revocations wait in the outbox, never in the credential store.
        for index in steps.indices {
            guard case .revoke(let kind) = steps[index].kind, steps[index].status == .failed,
                let value = token.value(of: kind)
            else { continue }
            let entry = OutboxEntry(
                provider: token.provider, kind: kind, token: value, account: credential.metadata.displayName,
                tokenExpiresAt: kind == .accessToken ? token.expiresAt : nil, createdAt: now(), attempts: 1,
                nextAttemptAt: now().addingTimeInterval(
                    OutboxBackoff.default.delay(
                        afterAttempts: 1, retryAfter: (steps[index].error as? ProviderError)?.retryAfter)),
                lastError: steps[index].reason)
            do {
                try await storage.enqueue(entry)
                steps[index].status = .queued
                steps[index].isRetryable = true
            } catch {
                steps[index].reason = "\(steps[index].reason ?? "failed"); it could not be queued: \(error)"
            }
        }

        // 6. Local removal.
        do {
            try await remove(credential.id)
            steps.append(SignOutStep(credential, .localRemoval, .succeeded))
            return AccountSignOut(account: credential.id, steps: steps, failure: nil)
        } catch {
            steps.append(
                SignOutStep(
                    credential, .localRemoval, .failed, reason: error.description, error: error, retryable: true))
            return AccountSignOut(
                account: credential.id, steps: steps,
                failure: SignOutError(
                    account: credential.id, reason: "The credential could not be removed from this device: \(error)",
                    underlying: error))
        }
    }

    private func globalSignOutStep(
        _ credential: StoredCredential, provider: (any IdentityProvider)?, supported: Bool, accessToken: String?
    ) async -> SignOutStep {
        guard let provider else { return Self.noProvider(credential, .globalSignOut) }
        guard supported else {
            return SignOutStep(
                credential, .globalSignOut, .skipped,
                reason: "unsupported by the provider; fell back to revoking the grant and ending the provider session")
        }
        guard let accessToken else {
            return SignOutStep(
                credential, .globalSignOut, .failed, reason: "no valid access token to sign out with", retryable: true)
        }
        do throws(ProviderError) {
            try await provider.globalSignOut(accessToken: accessToken)
            return SignOutStep(credential, .globalSignOut, .succeeded)
        } catch {
            return SignOutStep(
                credential, .globalSignOut, .failed, reason: error.description, error: error,
                retryable: error.isRetryable)
        }
    }

    private static func noProvider(_ credential: StoredCredential, _ kind: SignOutStep.Kind) -> SignOutStep {
        SignOutStep(
            credential, kind, .failed,
            reason: "no provider is registered for \(credential.token.provider); register it with the store",
            retryable: true)
    }

    private static func rank(_ kind: SignOutStep.Kind) -> Int {
        switch kind {
        case .refresh: 0
        case .globalSignOut: 1
        case .revoke(.accessToken): 2
        case .revoke(.refreshToken): 3
        case .revoke: 4
        case .endSession: 5
        case .hook: 6
        case .localRemoval: 7
        }
    }
}

/// An error of a hook, made sendable by keeping its description.
struct SendableError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = "\(error)" }
}
