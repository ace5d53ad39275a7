extension Credential {
    /// The user's claims from the userinfo endpoint. When the provider rejects the access
    /// token, it is marked rejected and refreshed once (one refresh for every caller and process
    /// sharing the store, as ``send(_:body:resource:scopes:through:options:)`` does) and the request sent again.
    public func userInfo() async throws(ProviderError) -> [String: JSONValue] {
        try await store.capabilities.sharing { () async throws(ProviderError) in try await askUserInfo() }
    }

    private func askUserInfo() async throws(ProviderError) -> [String: JSONValue] {
        let (token, accessToken) = try await usableToken()
        let provider = self.provider
        do {
            return try await withNonceRetriesInTurn { () async throws(ProviderError) in
                try await provider.userInfo(for: token)
            }
        } catch {
            guard error.rejectedAccessToken else { throw error }
            try await reject(accessToken: accessToken)
            let fresh = try await usableToken().token
            return try await withNonceRetriesInTurn { () async throws(ProviderError) in
                try await provider.userInfo(for: fresh)
            }
        }
    }

    /// What the provider says about one of this credential's tokens (RFC 7662).
    public func introspect(_ kind: TokenKind = .accessToken) async throws(ProviderError) -> Introspection {
        guard let value = try await stored().token.value(of: kind) else {
            throw ProviderError(.unsupported, reason: "The credential has no \(kind).")
        }
        let provider = self.provider
        return try await store.capabilities.sharing { () async throws(ProviderError) in
            try await provider.introspect(value, kind: kind)
        }
    }
}
