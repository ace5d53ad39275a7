import Foundation

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
                let values = token.values(of: kind)
                guard !values.isEmpty else {
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
                for value in values {
                    group.addTask {
                        do throws(ProviderError) {
                            try await provider.revoke(value, kind: kind)
                            return (kind, .revoked)
                        } catch {
                            return (kind, .failed(error))
                        }
                    }
                }
            }
            // A kind of several tokens (the access token and the resources' ones) is revoked
            // when every one of them is; the first failure is its outcome otherwise.
            for await (kind, outcome) in group where outcomes[kind]?.isFailure != true { outcomes[kind] = outcome }
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
