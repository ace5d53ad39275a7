public import Foundation
import HTTPTypes
import JWTKit
public import Logging

/// A standards-based OpenID Connect / OAuth 2.0 provider, as one client sees it: discovery
/// (cached), sign-in, refresh, revocation, introspection, userinfo and verified ID tokens.
///
/// ```swift
/// let provider = try await OpenIDProvider.discover(
///     OpenIDProviderConfiguration(issuer: issuer, clientID: "latchkey-cli"), transport: transport)
/// let credential = try await provider.signIn(.password(username: "alice", password: pw), into: store)
/// let token = try await credential.accessToken()
/// ```
public actor OpenIDProvider: IdentityProvider {
    /// How the provider is reached.
    public nonisolated let configuration: OpenIDProviderConfiguration
    /// The issuer and client of the tokens it issues.
    public nonisolated let identity: ProviderIdentity
    let logger: Logger
    /// Every request goes through it, refused answers read as OAuth 2.0 errors.
    nonisolated let wire: ProviderWire
    /// The time the provider goes by: token dates, ID-token checks, the key set's age,
    /// device-code polls.
    public nonisolated let clock: any LatchkeyClock
    /// The metadata: discovery, else RFC 8414, with the configured endpoints laid over it.
    private nonisolated let discovered: CachedValue<ProviderMetadata, ProviderError>
    /// The RFC 8414 document's endpoints that the OpenID configuration lacks (empty when there
    /// is none), read only when one is needed.
    private nonisolated let supplement = CachedValue<[EndpointKind: URL], ProviderError>()
    /// The ID-token checks, with this provider's key set, made on first use.
    var idTokenChecks: IDTokenChecks?
    /// The nonces the provider gave for DPoP proofs.
    nonisolated let dpopNonces: DPoPNonces
    /// Its metadata and key set, kept in the store it is registered with.
    nonisolated let documents: ProviderDocuments

    /// Creates a provider; discovery happens on first use (or pass `metadata` to skip it).
    ///
    /// - Parameters:
    ///   - clock: the time of token dates and ID-token checks, and what device-code polls wait on.
    public init(
        configuration: OpenIDProviderConfiguration,
        transport: any HTTPTransport,
        metadata: ProviderMetadata? = nil,
        logger: Logger? = nil,
        clock: any LatchkeyClock = SystemClock()
    ) {
        let logger = logger ?? .disabled("latchkey.provider")
        self.configuration = configuration
        self.identity = ProviderIdentity(issuer: configuration.issuer.absoluteString, clientID: configuration.clientID)
        self.dpopNonces = DPoPNonces(scope: "\(configuration.clientID)@\(configuration.issuer.absoluteString)")
        self.discovered = CachedValue(metadata)
        self.documents = ProviderDocuments(logger: logger)
        self.logger = logger
        let wire = ProviderWire(
            transport: transport, options: configuration.requestOptions, logger: logger, clock: clock
        ) { request, answer, now in OAuthRefusal.error(request, answer, now: now) }
        self.wire = wire
        self.clock = clock
    }

    /// The current date, by the provider's clock.
    nonisolated func now() -> Date { clock.date }

    /// Creates a provider and fetches its discovery document now, so that a wrong issuer fails here.
    public static func discover(
        _ configuration: OpenIDProviderConfiguration,
        transport: any HTTPTransport,
        logger: Logger? = nil
    ) async throws(ProviderError) -> OpenIDProvider {
        let provider = OpenIDProvider(configuration: configuration, transport: transport, logger: logger)
        _ = try await provider.metadata()
        return provider
    }

    // MARK: Metadata

    /// The provider's metadata: discovery, else RFC 8414 metadata, with the configured endpoints
    /// laid over it. Fetched once; concurrent callers share the fetch.
    public func metadata() async throws(ProviderError) -> ProviderMetadata {
        let metadata = try await discovered.value { await self.fetchMetadata() }
        if metadata.fromOAuthDocument, supplement.current == nil { supplement.set([:]) }
        return metadata
    }

    /// Fetches the metadata and the key set again, and keeps them in the calling store (whose
    /// copies the caller forgot first: `latchkey provider refresh`).
    public func fetchPublishedDocuments() async throws(ProviderError) {
        discovered.set(nil)
        let fetched = await fetchMetadata()
        let metadata = try fetched.get()
        discovered.set(metadata)
        _ = try await idTokens.keys.keys(refetch: true)
    }

    /// The URL of an endpoint: from configuration, else from the OpenID configuration, else
    /// from the RFC 8414 metadata (read only when the first lacks it).
    public func endpoint(_ kind: EndpointKind) async throws(ProviderError) -> URL {
        if let configured = configuration.endpoints[kind] { return configured }
        let metadata = try await metadata()
        if let url = metadata.endpoints[kind] { return url }
        if let unusable = metadata.unusable(kind) { throw unusable }
        let added = try await supplement.value { await self.fetchSupplement() }
        if let url = added[kind] { return url }
        throw ProviderError(
            .missingEndpoint, endpoint: kind,
            reason: "The provider has no \(kind) endpoint in its metadata; set one in the configuration.")
    }

    /// The two places a provider publishes its metadata: the OpenID configuration below the
    /// issuer, and the RFC 8414 document, whose well-known segment goes between the host and
    /// the issuer's path (RFC 8414 §3.1).
    private static func metadataLocations(_ configuration: OpenIDProviderConfiguration) -> (openID: URL?, oauth: URL?) {
        let issuer = configuration.issuer.absoluteString
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var oauth: URL?
        if let components = URLComponents(url: configuration.issuer, resolvingAgainstBaseURL: false),
            let scheme = components.scheme, let host = components.host
        {
            let port = components.port.map { ":\($0)" } ?? ""
            let path = components.path == "/" ? "" : components.path
            oauth = URL(string: "\(scheme)://\(host)\(port)/.well-known/oauth-authorization-server\(path)")
        }
        return (URL(string: trimmed + "/.well-known/openid-configuration"), oauth)
    }

    private nonisolated func fetchMetadata() async -> Result<ProviderMetadata, ProviderError> {
        let locations = Self.metadataLocations(configuration)
        var lastError = ProviderError(
            .missingEndpoint, endpoint: .discovery, reason: "No discovery document was found.")
        for (index, location) in [locations.openID, locations.oauth].enumerated() {
            guard let url = location else { continue }
            do throws(ProviderError) {
                var metadata = try await fetchDocument(url)
                metadata.endpoints.merge(configuration.endpoints) { _, configured in configured }
                // Read from the RFC 8414 document already: there is nothing to add from it.
                metadata.fromOAuthDocument = index == 1
                return .success(metadata)
            } catch {
                lastError = error
                // Only a missing document moves on to the next location.
                if error.status != 404 && error.code != .invalidResponse { return .failure(error) }
            }
        }
        if configuration.endpoints[.token] != nil {
            // Everything needed is configured: go on without discovery.
            var metadata = ProviderMetadata(
                issuer: configuration.issuer.absoluteString, endpoints: configuration.endpoints)
            metadata.fromOAuthDocument = true
            return .success(metadata)
        }
        return .failure(lastError)
    }

    /// One metadata document (the store's copy while it is valid, else fetched and kept there;
    /// see ``ProviderDocuments``), checked to be this issuer's.
    private nonisolated func fetchDocument(_ url: URL) async throws(ProviderError) -> ProviderMetadata {
        let issuer = configuration.issuer.absoluteString
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let wire = self.wire
        // Checked before it is kept: a document of another issuer is never kept for anyone.
        return try await documents.document(
            .discovery, at: url, now: now(), lifetime: Self.metadataLifetime,
            read: { @Sendable document throws(ProviderError) in
                guard let fields = ProviderWire.object(document.body) else {
                    throw ProviderError(
                        .invalidResponse, endpoint: .discovery, reason: "The discovery document is not a JSON object.")
                }
                let metadata = try ProviderMetadata(document: fields)
                guard metadata.issuer == issuer || metadata.issuer == trimmed else {
                    throw ProviderError(
                        .invalidResponse, endpoint: .discovery,
                        reason: "The discovery document names another issuer than the one configured.")
                }
                return metadata
            }
        ) { conditions async throws(ProviderError) in try await wire.document(.discovery, url, conditions) }
    }

    /// How long a provider's metadata is kept in the store when the provider does not say
    /// (`Cache-Control: max-age`): a day.
    static let metadataLifetime: TimeInterval = 86_400
    /// How long its key set is, likewise: an hour (an unknown `kid` fetches it again sooner).
    static let keySetLifetime: TimeInterval = 3_600

    /// The endpoints of the RFC 8414 document. A missing or foreign document adds nothing; a
    /// network failure is returned, and the fetch is tried again next time.
    private nonisolated func fetchSupplement() async -> Result<[EndpointKind: URL], ProviderError> {
        guard let url = Self.metadataLocations(configuration).oauth else { return .success([:]) }
        do throws(ProviderError) {
            let document = try await fetchDocument(url)
            logger.debug(
                "endpoints added from the RFC 8414 metadata",
                metadata: ["endpoints": "\(document.endpoints.keys.map(\.rawValue).sorted())"])
            return .success(document.endpoints)
        } catch {
            if error.isRetryable { return .failure(error) }
            logger.debug("no RFC 8414 metadata to add", metadata: ["error": "\(error)"])
            return .success([:])
        }
    }

    /// The key set: the store's copy while it is valid (and newer than `newerThan`), else
    /// fetched and kept there.
    func fetchJWKS(newerThan: Date?) async throws(ProviderError) -> JWKSCache.Fetched {
        try await documents.keySet(at: try await endpoint(.jwks), now: now(), newerThan: newerThan, through: wire)
    }

    /// Verifies a back-channel logout token from this provider for this client, with the key
    /// set ID tokens are verified with (fetched again once for an unknown `kid`).
    ///
    /// - Parameter maximumAge: how old, by its `iat`, a token without `exp` may be.
    /// - Throws: ``LogoutTokenError`` naming the check that failed; a key set that cannot be
    ///   fetched is ``TokenCheck/keysUnavailable``.
    public func verifyLogoutToken(_ token: String, maximumAge: TimeInterval = 120) async throws(LogoutTokenError)
        -> LogoutTokenClaims
    {
        let issuer: String
        do {
            issuer = try await metadata().issuer
            _ = try await idTokens.keys.keys()
        } catch {
            throw LogoutTokenError(.keysUnavailable)
        }
        let verifier = LogoutTokenVerifier(
            issuer: issuer, clientID: configuration.clientID, algorithms: configuration.idTokenAlgorithms,
            leeway: configuration.leeway, maximumAge: maximumAge)
        let keys = idTokens.keys
        return try await verifier.verify(token, now: now()) { refetch in try await keys.keys(refetch: refetch) }
    }

    /// Verifies an ID token from this provider for this client.
    public func verifyIDToken(
        _ idToken: String, nonce: String? = nil, accessToken: String? = nil, subject: String? = nil
    ) async throws(ProviderError) -> IDTokenClaims {
        try await idTokens.verify(
            idToken, issuer: try await metadata().issuer, nonce: nonce, accessToken: accessToken, subject: subject,
            now: now())
    }
}

extension OpenIDProvider: ChecksIDTokens {
    nonisolated var idTokenClientID: String { configuration.clientID }
    nonisolated var idTokenAlgorithms: Set<JWSAlgorithm> { configuration.idTokenAlgorithms }
    nonisolated var idTokenLeeway: TimeInterval { configuration.leeway }
}
