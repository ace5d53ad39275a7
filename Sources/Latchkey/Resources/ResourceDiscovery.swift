public import Foundation
import HTTPTypes

/// Finds, from a protected resource's URL alone, how to get a token for it (RFC 9728, as the
/// MCP authorization specification uses it): asks the resource without a token, reads its
/// challenge, fetches its protected resource metadata (the URL the challenge names, else the
/// well-known URL), and checks it. The authorization server it names is then an ordinary
/// OpenID or OAuth provider (`OpenIDProviderConfiguration(issuer:)`), whose own metadata is
/// fetched and checked as any provider's is.
///
/// The metadata is kept as providers' documents are (``ProviderDocumentStorage``): once it
/// passed its checks, for the resource's `Cache-Control: max-age` (else an hour), used stale
/// while one caller revalidates it. The resource itself is asked every time: its challenge says
/// whether it wants a token now, where its metadata is, and which scopes it needs.
public struct ResourceDiscovery: Sendable {
    /// The transport the requests go through.
    public var transport: any HTTPTransport
    /// The longest each request may take.
    public var timeout: Duration
    /// Where checked metadata is kept for every process sharing it: a storage's
    /// ``StorageCapabilities/providerDocuments``. `nil`: a store's call's (``StorageCapabilities/current``),
    /// else none, and the metadata is fetched every time.
    public var documents: (any ProviderDocumentStorage)?
    /// The clock a kept document's lifetime is measured by.
    public var clock: any LatchkeyClock

    /// A discovery through `transport`, keeping metadata in `documents`.
    public init(
        transport: any HTTPTransport, timeout: Duration = .seconds(30),
        documents: (any ProviderDocumentStorage)? = nil, clock: any LatchkeyClock = SystemClock()
    ) {
        self.transport = transport
        self.timeout = timeout
        self.documents = documents
        self.clock = clock
    }

    /// How long metadata is kept when the resource does not say (`Cache-Control: max-age`).
    static let metadataLifetime: TimeInterval = 3_600

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
        let metadata = try await metadata(at: location, for: resource)
        return DiscoveredResource(metadata: metadata, challenge: challenge)
    }

    /// The checked metadata of `resource` at `location`: the kept copy while it may be used,
    /// else fetched (with the kept copy's validators), checked, then kept.
    func metadata(at location: URL, for resource: URL) async throws(ResourceDiscoveryError)
        -> ProtectedResourceMetadata
    {
        let documents = ProviderDocuments(logger: .disabled("latchkey.resource-discovery"))
        let key = "protected-resource \(resource.absoluteString) \(location.absoluteString)"
        let now = clock.date
        let discovery = self
        let find = { () async throws(ProviderError) -> ProtectedResourceMetadata in
            try await documents.document(
                keyed: key, now: now, lifetime: Self.metadataLifetime,
                read: { @Sendable document throws(ProviderError) in
                    do throws(ResourceDiscoveryError) {
                        return try ProtectedResourceMetadata(json: document.body, fetchedFor: resource)
                    } catch {
                        throw ProviderError(.invalidResponse, reason: error.reason, underlying: error)
                    }
                },
                fetch: { conditions async throws(ProviderError) in
                    do throws(ResourceDiscoveryError) {
                        let answer = try await discovery.get(location, conditions)
                        guard answer.response.status == .ok || answer.response.status == .notModified else {
                            throw ResourceDiscoveryError(
                                .noMetadata, url: location,
                                reason:
                                    "\(ProtectedResourceMetadata.shown(resource)) publishes no protected resource metadata at \(ProtectedResourceMetadata.shown(location)) (RFC 9728).",
                                status: answer.response.status.code)
                        }
                        return answer
                    } catch {
                        throw ProviderError(.invalidResponse, reason: error.reason, underlying: error)
                    }
                })
        }
        do throws(ProviderError) {
            guard let documents = self.documents else { return try await find() }
            return try await StorageCapabilities(providerDocuments: documents).sharing(find)
        } catch {
            if let known = error.underlying as? ResourceDiscoveryError { throw known }
            throw ResourceDiscoveryError(.invalidMetadata, url: location, reason: error.reason)
        }
    }

    private func get(_ url: URL, _ headers: HTTPFields = [:]) async throws(ResourceDiscoveryError)
        -> HTTPTransportResponse
    {
        guard EndpointSecurity.isRequestTarget(url) else {
            throw ResourceDiscoveryError(
                .invalidMetadata, url: url, reason: "\(ProtectedResourceMetadata.shown(url)) is not a usable URL.")
        }
        var request = HTTPRequest(method: .get, url: url)
        request.headerFields[.accept] = "application/json"
        for field in headers { request.headerFields[field.name] = field.value }
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
