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
        allowsPasswordGrant: Bool = false
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
    }

    /// The client authentication used at `endpoint`.
    public func authentication(for endpoint: EndpointKind) -> ClientAuthentication {
        endpointAuthentication[endpoint] ?? authentication
    }
}
