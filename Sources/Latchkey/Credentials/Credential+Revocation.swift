import Tracing

extension Credential {
    /// Revokes tokens at the provider (RFC 7009), every kind in parallel, and drops each revoked
    /// token from the stored credential. A credential with nothing usable left is removed from
    /// the store; a token whose revocation failed stays.
    ///
    /// `.refreshToken` also revokes the access token: the grant ends, and a provider that does
    /// not cascade on its own must not leave the access token alive. A kind the provider
    /// revokes only with the refresh token is not sent on its own (see
    /// ``IdentityProvider/revocableKinds``).
    ///
    /// The revocation runs in the credential's transaction, so no refresh interleaves with it;
    /// only the values that were revoked leave the store.
    public func revoke(_ scope: RevocationScope = .all) async -> RevocationResult {
        await withSpan(LatchkeyTelemetry.SpanName.revoke) { span in
            let provider = self.provider
            let result: RevocationResult
            do throws(StorageError) {
                result = try await store.transaction(id) { transaction in
                    await transaction.revoke(scope, with: provider)
                }
            } catch {
                result = RevocationResult(outcomes: [.accessToken: .failed(.storage(error))], removedFromStore: false)
            }
            if !result.succeeded { span.setStatus(SpanStatus(code: .error)) }
            return result
        }
    }

    /// Removes the credential from this device only. No server is told: its tokens stay valid
    /// on the server until they expire. Revoke first to end them.
    public func remove() async throws(ProviderError) {
        do {
            try await store.remove(id)
        } catch {
            throw .storage(error)
        }
    }
}
