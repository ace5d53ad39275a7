public import Foundation

/// Access tokens for single resources (RFC 8707 resource indicators): one refresh token, an
/// access token per API, each with that API as its audience, as Auth0's multi-resource refresh
/// tokens and `oidc-token --aud` give.
extension Credential {
    /// An access token for `resource` alone (or, with `nil`, for what the provider gives by
    /// default), for `scopes` (narrower than the grant's) or the grant's, valid for at least `minimumValidity` seconds: the one kept with the credential,
    /// or a new one got with the account's refresh token (stored before it is returned, and got
    /// once for every caller and process sharing the store). The account's own access token is
    /// not touched; a sign-out or ``revoke(_:)`` of the access token covers these too.
    ///
    /// - Throws: ``ProviderError/Code/invalidArgument`` when `resource` is not an absolute URI
    ///   without a fragment (RFC 8707 §2), the provider's `invalid_target` when it will not
    ///   issue a token for it, and what a refresh throws otherwise.
    public func accessToken(for resource: URL?, scopes: [String]? = nil, minimumValidity: TimeInterval = 60)
        async throws(ProviderError) -> String
    {
        try await resourceToken(for: resource, scopes: scopes, minimumValidity: minimumValidity).accessToken
    }

    /// The access token for `resource`, with its type, scopes and expiry (see
    /// ``accessToken(for:scopes:minimumValidity:)``).
    public func resourceToken(for resource: URL?, scopes: [String]? = nil, minimumValidity: TimeInterval = 60)
        async throws(ProviderError) -> ResourceToken
    {
        let indicator = resource?.absoluteString
        if let indicator, !ResourceToken.isValidResource(indicator) {
            throw ProviderError(
                .invalidArgument, reason: "A resource must be an absolute URI without a fragment (RFC 8707 §2).")
        }
        let current = try await stored()
        if let kept = current.token.resourceTokens[ResourceToken.key(resource: indicator, scopes: scopes)],
            kept.isValid(for: minimumValidity, at: now())
        {
            return kept
        }
        let provider = self.provider
        try await store.capabilities.sharing { () async throws(ProviderError) in
            try await provider.prepareRefresh(of: current.token)
        }
        return try await transaction { transaction in
            await transaction.resourceToken(indicator, scopes: scopes, minimumValidity: minimumValidity, with: provider)
        }.get()
    }
}
