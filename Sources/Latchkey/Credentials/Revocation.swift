/// Which tokens to revoke.
public enum RevocationScope: String, Sendable, Hashable, CaseIterable {
    /// Every token the credential has, in parallel.
    case all
    /// The access token only: the refresh token and device secret stay usable.
    case accessToken = "access"
    /// The refresh token, and with it the access token (the grant ends).
    case refreshToken = "refresh"
    /// The device secret only.
    case deviceSecret = "device-secret"
}

/// The outcome of revoking one kind of token.
public enum RevocationOutcome: Sendable {
    /// The provider confirmed the revocation; the token left the stored credential.
    case revoked
    /// The revocation failed; the token stays where it was.
    case failed(ProviderError)
    /// The credential had no such token.
    case notPresent
    /// Not sent on its own: the provider revokes this kind only together with the refresh
    /// token (Amazon Cognito's access tokens), so it ends when that revocation succeeds.
    case endsWithRefreshToken

    /// Whether the token is revoked.
    public var isRevoked: Bool { if case .revoked = self { true } else { false } }
}

/// What a revocation did, kind by kind (never only the first error).
///
/// When the provider confirms the refresh token's revocation, a kind it revokes only with the
/// refresh token (``RevocationOutcome/endsWithRefreshToken``) has ended too and leaves the
/// stored credential as well.
public struct RevocationResult: Sendable {
    /// The outcome for each kind that was asked for.
    public var outcomes: [TokenKind: RevocationOutcome]
    /// Whether the credential was removed from the store because nothing usable was left.
    public var removedFromStore: Bool

    /// Whether every token asked for is revoked (or was not there).
    public var succeeded: Bool {
        outcomes.values.allSatisfy { if case .failed = $0 { false } else { true } }
    }

    /// The failures, by kind.
    public var failures: [TokenKind: ProviderError] {
        outcomes.compactMapValues { if case .failed(let error) = $0 { error } else { nil } }
    }
}

/// The one place Latchkey sends revocations of a credential's tokens: every kind at once, an
/// outcome for each, and the provider's ``IdentityProvider/revocableKinds`` respected.
enum RevocationFanOut {
    /// Revokes `kinds` of `token` at `provider`, in parallel.
    ///
    /// A kind the provider cannot revoke on its own is not sent: it is
    /// ``RevocationOutcome/endsWithRefreshToken`` when the refresh token is revoked in the same
    /// call, and a failure (``ProviderError/Code/unsupported``) otherwise.
    static func revoke(
        _ kinds: [TokenKind], of token: Token, at provider: any IdentityProvider
    ) async -> [TokenKind: RevocationOutcome] {
        let revocable = provider.revocableKinds
        let grantRevoked =
            kinds.contains(.refreshToken) && token.refreshToken != nil && revocable.contains(.refreshToken)
        var outcomes: [TokenKind: RevocationOutcome] = [:]
        await withTaskGroup(of: (TokenKind, RevocationOutcome).self) { group in
            for kind in kinds {
                guard let value = token.value(of: kind) else {
                    outcomes[kind] = .notPresent
                    continue
                }
                guard revocable.contains(kind) else {
                    outcomes[kind] =
                        grantRevoked
                        ? .endsWithRefreshToken
                        : .failed(
                            ProviderError(
                                .unsupported, endpoint: .revocation,
                                reason:
                                    "The provider revokes the \(kind) only together with the refresh token; revoke that to end it."
                            ))
                    continue
                }
                group.addTask {
                    do throws(ProviderError) {
                        try await provider.revoke(value, kind: kind)
                        return (kind, .revoked)
                    } catch {
                        return (kind, .failed(error))
                    }
                }
            }
            for await (kind, outcome) in group { outcomes[kind] = outcome }
        }
        Telemetry.revocations(outcomes)
        return outcomes
    }

    /// The kinds that have ended at the provider, by the outcomes of one fan-out.
    static func ended(_ outcomes: [TokenKind: RevocationOutcome]) -> Set<TokenKind> {
        let grantRevoked = outcomes[.refreshToken]?.isRevoked == true
        return Set(
            outcomes.compactMap { kind, outcome in
                switch outcome {
                case .revoked: kind
                case .endsWithRefreshToken: grantRevoked ? kind : nil
                case .failed, .notPresent: nil
                }
            })
    }
}
