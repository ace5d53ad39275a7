import Foundation

/// How the plan records what the revocations and the end-session request came to, and which
/// entries it queues for the server steps that failed.
extension SignOutPlan {
    mutating func recordRevocation(_ kind: TokenKind, _ outcome: RevocationOutcome?) {
        switch outcome {
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

    mutating func recordEndSession(_ result: Result<URL?, ProviderError>) {
        switch result {
        case .success(let url?):
            record(
                .endSession, .skipped, reason: .init(.needsBrowser, "the provider needs a browser to end its session"),
                browserURL: url)
        case .success(nil):
            record(.endSession, .succeeded)
        case .failure(let error) where error.code == .unsupported && !options.endProviderSession:
            record(
                .endSession, .skipped, reason: .init(.noEndSessionEndpoint, "the provider has no end-session endpoint"))
        case .failure(let error):
            record(
                .endSession, .failed, reason: .init(.failed, error.description), error: error,
                retryable: error.isRetryable)
        }
    }

    /// The outbox entries for the server steps that failed: a revocation holds its token (one
    /// entry per token: the access token's step covers the resources' access tokens too), with
    /// the expiry the provider stated; a global sign-out and an end-session request hold the
    /// grant they are sent with. A global sign-out needs a token to authenticate with; every
    /// other entry queued with it waits for it.
    func entriesToQueue() -> [OutboxEntry] {
        let failed = steps.filter { $0.status == .failed }
        let globalQueued =
            failed.contains { $0.kind == .globalSignOut } && (tokens.hasAccessToken || tokens.hasRefreshToken)
        let global = queueing.makeID()
        return failed.flatMap { step -> [OutboxEntry] in
            let action: OutboxEntry.Action
            switch step.kind {
            case .globalSignOut where globalQueued: action = .globalSignOut
            case .revoke(let kind): action = .revoke(kind)
            case .endSession: action = .endSession
            default: return []
            }
            let payloads: [(OutboxEntry.Payload, Date?)]
            if let kind = action.revokedKind {
                payloads = token.values(of: kind).map { value in
                    let expiry =
                        value == token.value(of: kind)
                        ? token.expiry(of: kind)
                        : token.resourceTokens.values.first { $0.accessToken == value }?.expiresAt
                    return (.token(value), expiry)
                }
            } else {
                payloads = [(.grant(OutboxGrant(token)), nil)]
            }
            let retryAfter = (step.error as? ProviderError)?.retryAfter
            return payloads.map { payload, expiry in
                OutboxEntry(
                    id: action == .globalSignOut ? global : queueing.makeID(), provider: token.provider,
                    action: action, payload: payload, account: accountName, tokenExpiresAt: expiry,
                    createdAt: queueing.date, attempts: 1,
                    nextAttemptAt: queueing.date.addingTimeInterval(
                        OutboxBackoff.default.delay(afterAttempts: 1, retryAfter: retryAfter, jitter: queueing.jitter)),
                    lastError: step.reason?.text, failureCause: Self.cause(of: step),
                    failedPermanently: !step.isRetryable,
                    waitsFor: globalQueued && action != .globalSignOut ? global : nil)
            }
        }
    }

    /// Why a step that is queued failed, as the outbox keeps it.
    private static func cause(of step: SignOutStep) -> OutboxEntry.FailureCause {
        switch step.reason?.code {
        case .noProvider?: return .noProvider
        case .heldForGlobalSignOut?: return .heldBack
        default: return step.isRetryable ? .unavailable : .refused
        }
    }
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
