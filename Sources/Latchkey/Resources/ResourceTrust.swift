public import Foundation

/// Whether a protected resource may be sent (or shown) a token from a given issuer: the MCP
/// authorization specification's rule that a client never gives a server a token that server's
/// own authorization server did not issue, as a pure value. A resource is trusted with an
/// issuer's tokens when its protected resource metadata (RFC 9728) lists that issuer among its
/// `authorization_servers`, when the user paired the two on purpose (a provider added for the
/// resource, or a sign-in for it), or when it lies at the issuer's own origin. Anything else —
/// no metadata, metadata naming other servers — is refused before any token is asked for.
public enum ResourceTrust: Sendable, Hashable {
    /// The resource's metadata names the issuer.
    case namedByMetadata
    /// The user paired the resource with the issuer's provider: a pairing names it, or a
    /// resource it lies under (the same origin, beneath the pairing's path).
    case paired
    /// The resource lies at the issuer's own origin (its userinfo endpoint, say): the
    /// authorization server is trusted with its own tokens.
    case issuersOwn
    /// Neither: the resource names these authorization servers (none when it published no
    /// metadata), and the issuer is not among them.
    case untrusted(authorizationServers: [URL])

    /// Whether a token may go to the resource.
    public var isTrusted: Bool {
        if case .untrusted = self { false } else { true }
    }

    /// The trust of `resource` in `issuer`'s tokens, known without asking the resource: a
    /// pairing, or the issuer's own origin. `nil` when only its metadata can tell.
    public static func decide(resource: URL, issuer: String, paired: [URL]) -> ResourceTrust? {
        if paired.contains(where: { covers($0, resource) }) { return .paired }
        if let issuerURL = URL(string: issuer), isSameOrigin(issuerURL, resource) { return .issuersOwn }
        return nil
    }

    /// The trust of `resource` in `issuer`'s tokens, from its `metadata` (`nil` when it
    /// published none) and the resources the user paired with the issuer's provider.
    public static func decide(
        resource: URL, issuer: String, metadata: ProtectedResourceMetadata?, paired: [URL] = []
    ) -> ResourceTrust {
        if let known = decide(resource: resource, issuer: issuer, paired: paired) { return known }
        let servers = metadata?.authorizationServers ?? []
        if servers.contains(where: { isSameIssuer($0.absoluteString, issuer) }) { return .namedByMetadata }
        return .untrusted(authorizationServers: servers)
    }

    /// Whether `pairing` covers `resource`: the same origin, and `resource`'s path is the
    /// pairing's or lies beneath it (whole segments: `/api` covers `/api/v1`, not `/apiary`).
    /// A pairing with a query or a fragment covers only itself.
    static func covers(_ pairing: URL, _ resource: URL) -> Bool {
        if ProtectedResourceMetadata.isIdentical(pairing, resource) { return true }
        guard isSameOrigin(pairing, resource),
            let paired = URLComponents(url: pairing, resolvingAgainstBaseURL: false),
            let asked = URLComponents(url: resource, resolvingAgainstBaseURL: false),
            paired.percentEncodedQuery == nil, paired.percentEncodedFragment == nil
        else { return false }
        let base =
            paired.percentEncodedPath.hasSuffix("/") ? paired.percentEncodedPath : paired.percentEncodedPath + "/"
        let path = asked.percentEncodedPath.hasSuffix("/") ? asked.percentEncodedPath : asked.percentEncodedPath + "/"
        return path.hasPrefix(base)
    }

    /// Whether two URLs share scheme, host and port (the port the scheme implies counted).
    static func isSameOrigin(_ first: URL, _ second: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int)? {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
                return nil
            }
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
            return (scheme, host, port)
        }
        guard let a = origin(first), let b = origin(second) else { return false }
        return a == b
    }

    /// Whether two issuer identifiers name the same issuer: the same text, but for the case of
    /// the scheme and the host and a trailing slash (RFC 8414 issuers carry none, but metadata
    /// written by hand often adds one).
    static func isSameIssuer(_ first: String, _ second: String) -> Bool {
        func trimmed(_ text: String) -> String { text.hasSuffix("/") ? String(text.dropLast()) : text }
        guard let a = URL(string: trimmed(first)), let b = URL(string: trimmed(second)) else { return false }
        return ProtectedResourceMetadata.isIdentical(a, b)
    }
}

extension ResourceDiscovery {
    /// The checked protected resource metadata of `resource`, for deciding its
    /// ``ResourceTrust``: the document its challenge names (a request without a token), else
    /// the well-known one (RFC 9728 §3); `nil` when it publishes none. A document that fails
    /// RFC 9728's checks is an error, never taken as trust.
    ///
    /// - Throws: ``ResourceDiscoveryError``: the resource could not be reached, or its metadata
    ///   fails the checks.
    public func metadataForTrust(of resource: URL) async throws(ResourceDiscoveryError) -> ProtectedResourceMetadata? {
        do {
            return try await discover(resource).metadata
        } catch  where error.code == .noMetadata {
            return nil
        } catch  where error.code == .notProtected {
            // It answered without a challenge (an MCP endpoint's GET may): its well-known
            // document still says whose tokens it takes.
            do {
                let checked = try ProtectedResourceMetadata.checkedResource(resource)
                return try await metadata(at: ProtectedResourceMetadata.wellKnownURL(for: checked), for: checked)
            } catch  where error.code == .noMetadata {
                return nil
            }
        }
    }
}
