import Foundation

/// DPoP (RFC 9449) at an OpenID provider: which sign-ins get a key, and the proofs that go with
/// the token endpoint and userinfo.
extension OpenIDProvider {
    /// A new key for a sign-in, when the configuration says tokens are to be bound.
    func signInProofKey() async throws(ProviderError) -> DPoPKey? {
        switch configuration.dpop {
        case .never: return nil
        case .required: return DPoPKey()
        case .whenAdvertised: return try await metadata().dpopSigningAlgorithms.contains("ES256") ? DPoPKey() : nil
        }
    }

    /// The proof a request about `token` carries: none for bearer tokens, one signed with the
    /// account's key for bound ones (`accessToken` when the request carries it).
    ///
    /// - Throws: ``ProviderError/Code/dpopKeyUnavailable`` when the tokens are bound and the
    ///   key is gone: that account must sign in again.
    nonisolated func proof(for token: Token, carrying accessToken: String? = nil) throws(ProviderError)
        -> DPoPSigning?
    {
        guard let binding = token.dpop else { return nil }
        guard let key = binding.key else { throw .dpopKeyUnavailable }
        return DPoPSigning(key: key, accessToken: accessToken, nonces: dpopNonces, clock: clock)
    }

    /// Writes the DPoP nonces this provider learned outside a store's call (at a sign-in) to the
    /// store's storage, so that the next process starts from them.
    public func share(with capabilities: StorageCapabilities) async {
        await dpopNonces.flush(into: capabilities.dpopNonces)
    }

    /// The tokens of a sign-in whose request carried a proof signed with `key`, bound to it.
    /// Under ``DPoPPolicy/required``, bearer tokens (a provider that ignored the proof) are
    /// refused, and revoked rather than left alive.
    func bind(_ token: Token, to key: DPoPKey?) async throws(ProviderError) -> Token {
        guard let key else { return token }
        var token = token
        token.dpop = DPoPBinding(key: key)
        if configuration.dpop == .required, token.tokenType.lowercased() != "dpop" {
            await discard(token, logger: logger)
            throw ProviderError(
                .dpopNotHonored, endpoint: .token,
                reason:
                    "The provider issued \(token.tokenType) tokens, not DPoP-bound ones, and this provider's configuration requires DPoP; they were revoked. Enable DPoP for this client at the provider."
            )
        }
        return token
    }
}

extension ProviderError {
    /// The tokens are bound to a DPoP key that is gone.
    static let dpopKeyUnavailable = ProviderError(
        .dpopKeyUnavailable,
        reason:
            "The credential's tokens are bound to a DPoP key the store no longer holds (or that does not open); sign this account in again."
    )
}
