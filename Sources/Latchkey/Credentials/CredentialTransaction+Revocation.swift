import Foundation
import Logging

extension CredentialTransaction {
    /// Revokes the tokens `scope` names at `provider`, every kind at once, and drops each
    /// revoked token from the stored credential; removes the credential when nothing usable is
    /// left. A token whose revocation failed stays.
    package func revoke(_ scope: RevocationScope, with provider: any IdentityProvider) async -> RevocationResult {
        let current: StoredCredential
        do throws(StorageError) {
            guard let stored = try await credential() else { throw .credentialNotFound(id) }
            current = stored
        } catch {
            return RevocationResult(outcomes: [.accessToken: .failed(.storage(error))], removedFromStore: false)
        }
        var outcomes = await RevocationFanOut.revoke(scope.kinds, of: current.token, at: provider)
        let ended = RevocationFanOut.ended(outcomes)
        let removed: Bool
        do {
            removed = try await discard(ended, of: current.token)
        } catch {
            // The server side is done; report that the local copy could not be updated.
            for kind in ended { outcomes[kind] = .failed(.storage(error)) }
            removed = false
        }
        for (kind, outcome) in outcomes {
            var metadata: Logger.Metadata = ["credential": "\(id)", "token": "\(kind)"]
            switch outcome {
            case .revoked: metadata["outcome"] = "revoked"
            case .endsWithRefreshToken: metadata["outcome"] = "ends with the refresh token"
            case .notPresent: metadata["outcome"] = "not present"
            case .failed(let error): (metadata["outcome"], metadata["error"]) = ("failed", "\(error)")
            }
            store.logger.debug("revocation", metadata: metadata)
        }
        return RevocationResult(outcomes: outcomes, removedFromStore: removed)
    }

    /// Drops the tokens of `kinds` that ended at the provider from the stored credential, by
    /// value: a token that replaced one of them meanwhile was never revoked and stays. Removes
    /// the credential when nothing usable is left, unless `keepingCredential`.
    ///
    /// - Returns: whether the credential was removed.
    @discardableResult
    package func discard(_ kinds: Set<TokenKind>, of revoked: Token, keepingCredential: Bool = false)
        async throws(StorageError) -> Bool
    {
        guard !kinds.isEmpty else { return false }
        // Nothing usable left: one compare-and-swap delete, instead of a write that drops the
        // tokens and a delete after it. A record that changed meanwhile goes the long way.
        if !keepingCredential, let held = try await credential() {
            var left = held.token
            for kind in kinds where left.value(of: kind) == revoked.value(of: kind) { left.discard(kind) }
            if !left.isUsable(at: store.clock.date), let removed = try await remove(ifVersion: held.version) {
                return removed
            }
        }
        let stored = try await update { credential in
            for kind in kinds where credential.token.value(of: kind) == revoked.value(of: kind) {
                credential.token.discard(kind)
            }
        }
        guard !keepingCredential, !stored.token.isUsable(at: store.clock.date) else { return false }
        return try await remove()
    }
}

extension RevocationScope {
    /// The kinds of token it revokes: `.refreshToken` ends the grant, so the access token too.
    var kinds: [TokenKind] {
        switch self {
        case .all: [.accessToken, .refreshToken, .deviceSecret]
        case .accessToken: [.accessToken]
        case .refreshToken: [.refreshToken, .accessToken]
        case .deviceSecret: [.deviceSecret]
        }
    }
}
