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
    /// Dynamic client registration (RFC 7591).
    case registration
    /// A provider-specific global sign-out endpoint.
    case globalSignOut = "global-signout"
    /// The discovery document itself.
    case discovery
    /// A Ping journey's `authenticate` endpoint (PingAM, Advanced Identity Cloud).
    case journey
    /// PingAM's `serverinfo`, which names the session cookie.
    case serverInfo = "serverinfo"
    /// PingAM's session validation (`sessions?_action=validate`).
    case sessionValidation = "session-validate"
    /// PingAM's session logout (`sessions?_action=logout`).
    case sessionLogout = "session-logout"

    public var description: String { rawValue }
}
