public import Foundation

/// How to reach an OpenID provider as one client.
public struct OpenIDProviderConfiguration: Sendable, Hashable {
    /// The issuer identifier (discovery is fetched below it).
    public var issuer: URL
    /// The client identifier.
    public var clientID: String
    /// How the client authenticates, unless ``endpointAuthentication`` says otherwise.
    public var authentication: ClientAuthentication
    /// Per-endpoint client authentication: some providers demand a secret for revocation or
    /// introspection even from a public client.
    public var endpointAuthentication: [EndpointKind: ClientAuthentication]
    /// The scopes asked for at sign-in.
    public var scopes: [String]
    /// Endpoints that replace (or add to) what discovery says.
    public var endpoints: [EndpointKind: URL]
    /// The ID token signature algorithms accepted.
    public var idTokenAlgorithms: Set<JWSAlgorithm>
    /// Clock skew tolerated on ID token times, in seconds.
    public var leeway: TimeInterval
    /// Limits of every request.
    public var requestOptions: HTTPTransportOptions
    /// Whether ``SignInMethod/password(username:password:)`` may be used: off unless asked for.
    /// RFC 9700 §2.4 says the resource owner password grant must not be used; it stays for
    /// scripts and tests against providers of one's own.
    public var allowsPasswordGrant: Bool
    /// Whether tokens are bound to a key of the account's own (DPoP, RFC 9449): never (the
    /// default), when the provider advertises it, or always.
    public var dpop: DPoPPolicy
    /// The resources (RFC 8707) a browser sign-in asks the grant to cover, for
    /// ``Credential/accessToken(for:scopes:minimumValidity:)``: some providers issue a
    /// resource's token only for resources the user authorized at sign-in.
    public var resources: [URL]

    /// Creates a configuration.
    public init(
        issuer: URL,
        clientID: String,
        authentication: ClientAuthentication = .none,
        endpointAuthentication: [EndpointKind: ClientAuthentication] = [:],
        scopes: [String] = ["openid", "profile", "email", "offline_access"],
        endpoints: [EndpointKind: URL] = [:],
        idTokenAlgorithms: Set<JWSAlgorithm> = IDTokenVerifier.defaultAlgorithms,
        leeway: TimeInterval = 60,
        requestOptions: HTTPTransportOptions = HTTPTransportOptions(),
        allowsPasswordGrant: Bool = false,
        dpop: DPoPPolicy = .never,
        resources: [URL] = []
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.authentication = authentication
        self.endpointAuthentication = endpointAuthentication
        self.scopes = scopes
        self.endpoints = endpoints
        self.idTokenAlgorithms = idTokenAlgorithms
        self.leeway = leeway
        self.requestOptions = requestOptions
        self.allowsPasswordGrant = allowsPasswordGrant
        self.dpop = dpop
        self.resources = resources
    }

    /// The client authentication used at `endpoint`.
    public func authentication(for endpoint: EndpointKind) -> ClientAuthentication {
        endpointAuthentication[endpoint] ?? authentication
    }
}

/// When a sign-in binds the account's tokens to a key of its own (DPoP, RFC 9449).
public enum DPoPPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Bearer tokens: no key, no proofs.
    case never
    /// A key when the provider's metadata lists ES256 in `dpop_signing_alg_values_supported`.
    case whenAdvertised = "when-advertised"
    /// Always a key; a sign-in whose tokens the provider did not bind is refused (and its tokens
    /// revoked).
    case required
}
