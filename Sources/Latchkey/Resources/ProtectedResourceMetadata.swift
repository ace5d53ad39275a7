public import Foundation

/// What a protected resource says about itself (OAuth 2.0 Protected Resource Metadata, RFC 9728
/// §2): its resource identifier, the authorization servers that issue tokens for it, and how it
/// takes them. Read from a document with ``init(json:fetchedFor:)``, which applies the RFC's
/// checks; a document that fails them is not used at all.
public struct ProtectedResourceMetadata: Sendable, Hashable {
    /// The resource identifier (`resource`): an https URL without a fragment.
    public var resource: URL
    /// The issuers of the authorization servers that issue tokens for the resource
    /// (`authorization_servers`), in the resource's order.
    public var authorizationServers: [URL]
    /// The scopes the resource uses in authorization requests (`scopes_supported`).
    public var scopesSupported: [String]
    /// How the resource takes a token (`bearer_methods_supported`: `header`, `body`, `query`).
    public var bearerMethodsSupported: [String]
    /// A name for people (`resource_name`).
    public var resourceName: String?
    /// Whether the resource takes only DPoP-bound access tokens
    /// (`dpop_bound_access_tokens_required`).
    public var dpopBoundAccessTokensRequired: Bool

    /// Metadata from its parts.
    public init(
        resource: URL, authorizationServers: [URL], scopesSupported: [String] = [],
        bearerMethodsSupported: [String] = [], resourceName: String? = nil, dpopBoundAccessTokensRequired: Bool = false
    ) {
        self.resource = resource
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.bearerMethodsSupported = bearerMethodsSupported
        self.resourceName = resourceName
        self.dpopBoundAccessTokensRequired = dpopBoundAccessTokensRequired
    }

    /// Reads the document `json`, fetched for the resource `resource`, and checks it as RFC 9728
    /// §3.3 says: its `resource` must be identical to the resource it was fetched for (scheme
    /// and host compared without case, RFC 3986 §6.2.2.1), or its content must not be used;
    /// every authorization server must be a URL a request can go to, https (http only to the
    /// loopback interface). Members the RFC does not define, or that have the wrong type when
    /// optional, are ignored.
    ///
    /// - Throws: ``ResourceDiscoveryError/Code/invalidMetadata``,
    ///   ``ResourceDiscoveryError/Code/resourceMismatch`` or
    ///   ``ResourceDiscoveryError/Code/noAuthorizationServer``.
    public init(json: Data, fetchedFor resource: URL) throws(ResourceDiscoveryError) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw ResourceDiscoveryError(
                .invalidMetadata, url: resource, reason: "The protected resource metadata is not a JSON object.")
        }
        guard let text = object["resource"] as? String, let named = URL(string: text) else {
            throw ResourceDiscoveryError(
                .invalidMetadata, url: resource, reason: "The protected resource metadata has no `resource`.")
        }
        guard Self.isIdentical(named, resource) else {
            throw ResourceDiscoveryError(
                .resourceMismatch, url: resource,
                reason:
                    "The protected resource metadata is for \(Self.shown(named)), not \(Self.shown(resource)) (RFC 9728 §3.3): it is not used."
            )
        }
        let servers = (object["authorization_servers"] as? [Any] ?? []).compactMap { $0 as? String }
            .compactMap(URL.init(string:))
            .filter { EndpointSecurity.isAcceptable($0) && $0.fragment == nil && $0.query == nil }
        guard !servers.isEmpty else {
            throw ResourceDiscoveryError(
                .noAuthorizationServer, url: resource,
                reason:
                    "The protected resource metadata names no authorization server Latchkey can use (an https URL, or http to this machine)."
            )
        }
        self.init(
            resource: resource, authorizationServers: servers,
            scopesSupported: (object["scopes_supported"] as? [Any] ?? []).compactMap { $0 as? String },
            bearerMethodsSupported: (object["bearer_methods_supported"] as? [Any] ?? []).compactMap { $0 as? String },
            resourceName: object["resource_name"] as? String,
            dpopBoundAccessTokensRequired: object["dpop_bound_access_tokens_required"] as? Bool ?? false)
    }

    /// The URL of the metadata of `resource` at the well-known location (RFC 9728 §3.1):
    /// `/.well-known/oauth-protected-resource` inserted between the host and the path, a
    /// terminating slash after the host removed, the query kept.
    ///
    /// - Throws: ``ResourceDiscoveryError/Code/invalidResource`` when `resource` is not a
    ///   resource identifier Latchkey can use (see ``checkedResource(_:)``).
    public static func wellKnownURL(for resource: URL) throws(ResourceDiscoveryError) -> URL {
        let resource = try checkedResource(resource)
        guard var components = URLComponents(url: resource, resolvingAgainstBaseURL: false) else {
            throw invalid(resource)
        }
        let path = components.percentEncodedPath == "/" ? "" : components.percentEncodedPath
        components.percentEncodedPath = "/.well-known/oauth-protected-resource" + path
        guard let url = components.url else { throw invalid(resource) }
        return url
    }

    /// `resource`, when it is a resource identifier Latchkey can use: an absolute https URL
    /// (http only to the loopback interface) without a fragment (RFC 9728 §1.2).
    public static func checkedResource(_ resource: URL) throws(ResourceDiscoveryError) -> URL {
        guard EndpointSecurity.isAcceptable(resource), resource.fragment == nil else { throw invalid(resource) }
        return resource
    }

    private static func invalid(_ resource: URL) -> ResourceDiscoveryError {
        ResourceDiscoveryError(
            .invalidResource, url: resource,
            reason:
                "\(shown(resource)) is not a resource URL Latchkey can use: an https URL (http only to this machine) without a fragment."
        )
    }

    /// Whether two resource identifiers are identical: the same text but for the case of the
    /// scheme and the host.
    static func isIdentical(_ first: URL, _ second: URL) -> Bool {
        guard var a = URLComponents(url: first, resolvingAgainstBaseURL: false),
            var b = URLComponents(url: second, resolvingAgainstBaseURL: false)
        else { return false }
        a.scheme = a.scheme?.lowercased()
        b.scheme = b.scheme?.lowercased()
        a.host = a.host?.lowercased()
        b.host = b.host?.lowercased()
        return a.string == b.string
    }

    /// A URL as an error shows it: at most 200 characters.
    static func shown(_ url: URL) -> String {
        let text = url.absoluteString
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
