public import Foundation

/// What a provider says about itself (OpenID Connect Discovery 1.0 §3, RFC 8414 §2): its issuer
/// and endpoints. Endpoints can also be set by configuration, because real providers leave some
/// out of discovery.
public struct ProviderMetadata: Sendable, Hashable {
    /// The issuer identifier.
    public var issuer: String
    /// The endpoints, by kind.
    public var endpoints: [EndpointKind: URL]
    /// Every field of the document, as it came.
    public var fields: [String: JSONValue]
    /// Whether it was read from the RFC 8414 document (or made from configuration), which then
    /// has nothing to add.
    var fromOAuthDocument = false
    /// The endpoints the document names with a value no request can go to (relative, or
    /// without a scheme or host), as it gave them: asking for one is an error naming it.
    var unusableEndpoints: [EndpointKind: String] = [:]

    /// Creates metadata.
    public init(issuer: String, endpoints: [EndpointKind: URL], fields: [String: JSONValue] = [:]) {
        self.issuer = issuer
        self.endpoints = endpoints
        self.fields = fields
    }

    /// The discovery keys of each endpoint kind. The global sign-out key is Latchkey's
    /// development provider's own; other providers have no standard one.
    static let keys: [EndpointKind: String] = [
        .authorization: "authorization_endpoint", .token: "token_endpoint", .revocation: "revocation_endpoint",
        .introspection: "introspection_endpoint", .userinfo: "userinfo_endpoint",
        .endSession: "end_session_endpoint", .jwks: "jwks_uri",
        .deviceAuthorization: "device_authorization_endpoint", .globalSignOut: "latchkey_global_signout_endpoint",
        .registration: "registration_endpoint",
    ]

    /// Reads a discovery or RFC 8414 document.
    init(document fields: [String: JSONValue]) throws(ProviderError) {
        guard let issuer = fields["issuer"]?.stringValue else {
            throw ProviderError(.invalidResponse, endpoint: .discovery, reason: "The discovery document has no issuer.")
        }
        var endpoints: [EndpointKind: URL] = [:]
        var unusable: [EndpointKind: String] = [:]
        for (kind, key) in Self.keys {
            guard let text = fields[key]?.stringValue else { continue }
            if let url = URL(string: text), EndpointSecurity.isRequestTarget(url) {
                endpoints[kind] = url
            } else {
                unusable[kind] = text
            }
        }
        self.init(issuer: issuer, endpoints: endpoints, fields: fields)
        unusableEndpoints = unusable
    }

    /// Why the document's endpoint of `kind` cannot be used, when it names one no request can go to.
    func unusable(_ kind: EndpointKind) -> ProviderError? {
        guard let text = unusableEndpoints[kind], let key = Self.keys[kind] else { return nil }
        let shown = text.count > 200 ? String(text.prefix(200)) + "…" : text
        return ProviderError(
            .invalidEndpoint, endpoint: kind,
            reason:
                "The provider's metadata names \(key) \"\(shown)\", which is not an absolute http(s) URL with a host; nothing was sent. The provider must fix its metadata, or the endpoint be set in the configuration."
        )
    }

    /// The grant types the document lists (often incomplete: a missing one may still work).
    public var grantTypesSupported: [String] {
        guard case .array(let values) = fields["grant_types_supported"] else { return [] }
        return values.compactMap(\.stringValue)
    }

    /// Whether the provider fetches a client's metadata from its client id when that id is an
    /// https URL (`client_id_metadata_document_supported`, OAuth Client ID Metadata Document, as
    /// MCP's authorization uses): such a client needs no registration.
    public var supportsClientIDMetadataDocuments: Bool {
        fields["client_id_metadata_document_supported"] == .bool(true)
    }

    /// The scopes the provider says it offers (`scopes_supported`); empty when it lists none.
    public var scopesSupported: [String] { strings("scopes_supported") }

    /// The PKCE methods the provider takes (`code_challenge_methods_supported`, RFC 8414 §2);
    /// empty when it lists none.
    public var codeChallengeMethodsSupported: [String] { strings("code_challenge_methods_supported") }

    /// Whether the provider is an OpenID provider, which issues ID tokens for the `openid` scope:
    /// its metadata lists ID token algorithms (required of OpenID Connect Discovery, unknown to
    /// RFC 8414) or offers `openid`.
    public var isOpenIDProvider: Bool {
        fields["id_token_signing_alg_values_supported"] != nil || scopesSupported.contains("openid")
    }

    private func strings(_ key: String) -> [String] {
        guard case .array(let values) = fields[key] else { return [] }
        return values.compactMap(\.stringValue)
    }

    /// The DPoP proof algorithms the provider takes (RFC 9449 §5.1); empty when it lists none.
    public var dpopSigningAlgorithms: [String] {
        guard case .array(let values) = fields["dpop_signing_alg_values_supported"] else { return [] }
        return values.compactMap(\.stringValue)
    }
}
