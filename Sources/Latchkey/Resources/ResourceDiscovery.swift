public import Foundation
import HTTPTypes

/// Finds, from a protected resource's URL alone, how to get a token for it (RFC 9728, as the
/// MCP authorization specification uses it): asks the resource without a token, reads its
/// challenge, fetches its protected resource metadata (the URL the challenge names, else the
/// well-known URL), and checks it. The authorization server it names is then an ordinary
/// OpenID or OAuth provider (`OpenIDProviderConfiguration(issuer:)`), whose own metadata is
/// fetched and checked as any provider's is.
public struct ResourceDiscovery: Sendable {
    /// The transport the requests go through.
    public var transport: any HTTPTransport
    /// The longest each request may take.
    public var timeout: Duration

    /// A discovery through `transport`.
    public init(transport: any HTTPTransport, timeout: Duration = .seconds(30)) {
        self.transport = transport
        self.timeout = timeout
    }

    /// Discovers the authorization of `resource`.
    ///
    /// - Throws: ``ResourceDiscoveryError``: the resource is not a URL Latchkey can use, does not
    ///   ask for authorization, has no metadata, or its metadata fails RFC 9728's checks.
    public func discover(_ resource: URL) async throws(ResourceDiscoveryError) -> DiscoveredResource {
        let resource = try ProtectedResourceMetadata.checkedResource(resource)
        let probe = try await get(resource)
        let challenge = ResourceChallenge(wwwAuthenticate: probe.response.headerFields[values: .wwwAuthenticate])
        guard probe.response.status == .unauthorized || challenge != nil else {
            throw ResourceDiscoveryError(
                .notProtected, url: resource,
                reason: "\(ProtectedResourceMetadata.shown(resource)) answered without asking for a token.",
                status: probe.response.status.code)
        }
        let named = challenge?.resourceMetadata.flatMap { EndpointSecurity.isAcceptable($0) ? $0 : nil }
        let location: URL
        if let named { location = named } else { location = try ProtectedResourceMetadata.wellKnownURL(for: resource) }
        let answer = try await get(location)
        guard answer.response.status == .ok else {
            throw ResourceDiscoveryError(
                .noMetadata, url: location,
                reason:
                    "\(ProtectedResourceMetadata.shown(resource)) publishes no protected resource metadata at \(ProtectedResourceMetadata.shown(location)) (RFC 9728).",
                status: answer.response.status.code)
        }
        let metadata = try ProtectedResourceMetadata(json: answer.body, fetchedFor: resource)
        return DiscoveredResource(metadata: metadata, challenge: challenge)
    }

    private func get(_ url: URL) async throws(ResourceDiscoveryError) -> HTTPTransportResponse {
        guard EndpointSecurity.isRequestTarget(url) else {
            throw ResourceDiscoveryError(
                .invalidMetadata, url: url, reason: "\(ProtectedResourceMetadata.shown(url)) is not a usable URL.")
        }
        var request = HTTPRequest(method: .get, url: url)
        request.headerFields[.accept] = "application/json"
        do {
            return try await transport.send(request, body: nil, options: HTTPTransportOptions(timeout: timeout))
        } catch {
            throw ResourceDiscoveryError(
                .unreachable, url: url, reason: "\(ProtectedResourceMetadata.shown(url)) did not answer: \(error).")
        }
    }
}

/// A protected resource whose authorization was discovered: its checked metadata and the
/// challenge it answered a request without a token with.
public struct DiscoveredResource: Sendable, Hashable {
    /// The resource's metadata, checked (RFC 9728 §3.3).
    public var metadata: ProtectedResourceMetadata
    /// The resource's challenge, when it sent one.
    public var challenge: ResourceChallenge?

    /// A discovered resource from its parts.
    public init(metadata: ProtectedResourceMetadata, challenge: ResourceChallenge?) {
        self.metadata = metadata
        self.challenge = challenge
    }

    /// The authorization server to sign in with: the first the resource names (there is one in
    /// metadata read from a document).
    public var authorizationServer: URL? { metadata.authorizationServers.first }

    /// The scopes to ask for: those the challenge names, else the metadata's `scopes_supported`
    /// (the MCP authorization specification's order).
    public var scopes: [String] {
        if let challenge, !challenge.scopes.isEmpty { return challenge.scopes }
        return metadata.scopesSupported
    }
}
