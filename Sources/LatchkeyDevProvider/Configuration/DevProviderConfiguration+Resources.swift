extension DevProviderConfiguration {
    /// The scopes the provider offers (`scopes_supported`, and what a registered client may ask
    /// for): OpenID's, and those its protected resources need or offer.
    var offeredScopes: [String] {
        var scopes = Self.defaultScopes
        for resource in protectedResources {
            for scope in resource.scopes + (resource.scopesSupported ?? []) where !scopes.contains(scope) {
                scopes.append(scope)
            }
        }
        return scopes
    }

    /// A protected resource the provider serves beside itself, for resource-first sign-in
    /// (RFC 9728): at `path` below the issuer it answers a request without a usable token with
    /// `401` and `WWW-Authenticate: Bearer resource_metadata="…"`, one whose token lacks
    /// `scopes` with `403` and `error="insufficient_scope"`, and one with a usable token (issued
    /// for it, when the token names a resource) with its user. Its metadata is at
    /// `/.well-known/oauth-protected-resource` followed by `path`.
    public struct ProtectedResource: Sendable, Codable, Hashable {
        /// Where the resource is served, below the issuer: `/resource`, `/mcp`.
        public var path: String
        /// The scopes a request needs (none by default).
        public var scopes: [String]
        /// What the metadata offers as `scopes_supported` (`scopes`, when left out).
        public var scopesSupported: [String]?

        /// A resource at `path` that needs `scopes`.
        public init(path: String, scopes: [String] = [], scopesSupported: [String]? = nil) {
            self.path = path.hasPrefix("/") ? path : "/" + path
            self.scopes = scopes
            self.scopesSupported = scopesSupported
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                path: try container.decode(String.self, forKey: .path),
                scopes: try container.decodeIfPresent([String].self, forKey: .scopes) ?? [],
                scopesSupported: try container.decodeIfPresent([String].self, forKey: .scopesSupported))
        }
    }
}
