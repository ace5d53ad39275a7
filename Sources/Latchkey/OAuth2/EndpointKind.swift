/// The endpoints of an OAuth 2.0 / OpenID Connect provider Latchkey talks to.
public enum EndpointKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case authorization
    case token
    case revocation
    case introspection
    case userinfo
    case endSession = "end-session"
    case jwks
    case deviceAuthorization = "device-authorization"
    /// A provider-specific global sign-out endpoint.
    case globalSignOut = "global-signout"
    /// The discovery document itself.
    case discovery

    public var description: String { rawValue }
}
