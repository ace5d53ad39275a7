public import Foundation

/// How to sign in for a resource known only by its URL: which client to sign in as, which grant
/// types to register it for and which scopes to ask for, decided from what the resource
/// (RFC 9728) and its authorization server (RFC 8414) say of themselves, by the MCP
/// authorization specification's rules (revision 2026-07-28). A pure value, so that every
/// caller decides alike and a test needs no server.
///
/// - **Scopes:** the resource's challenge's, else its metadata's `scopes_supported`; `openid` before them only at an OpenID provider, `offline_access`
///   only where the authorization server offers it (SEP-2207).
/// - **The code flow** only where the server takes PKCE's `S256` (its metadata's
///   `code_challenge_methods_supported`): without it the code could be redeemed by whoever
///   intercepts it.
/// - **The client:** a client id the user named; an https client id is a Client ID Metadata
///   Document, which the server must say it fetches; otherwise a public client is registered
///   (RFC 7591) for the code flow and refresh, and for the device grant (RFC 8628) wherever
///   the server has a device authorization endpoint, so that a sign-in on a machine without a
///   browser is never refused for the client's grant types.
public struct ResourceSignInPlan: Sendable, Hashable {
    /// How the sign-in obtains its grant.
    public enum Method: Sendable, Hashable {
        /// The authorization code with PKCE, through a browser.
        case browser
        /// The device authorization grant (RFC 8628).
        case device
        /// The resource owner password grant (tests and scripts only).
        case password
    }

    /// The client the sign-in runs as.
    public enum Client: Sendable, Hashable {
        /// A client id the user named, which the server knows.
        case named(String)
        /// A Client ID Metadata Document at this URL (the client id), which the server fetches.
        case metadataDocument(URL)
        /// A public client to register (RFC 7591), for these grant types.
        case register(grantTypes: [String])
    }

    /// The grant type of the device authorization grant (RFC 8628 §3.4).
    public static let deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// The resource signed in for, as its metadata names it.
    public var resource: URL
    /// The authorization server to sign in with.
    public var authorizationServer: URL
    /// The client to sign in as.
    public var client: Client
    /// The scopes to ask for.
    public var scopes: [String]

    /// Plans the sign-in for `resource`, whose authorization server's metadata is `server`, as
    /// `clientID` (`nil`: register one), by `method`. Throws when the server cannot serve the
    /// sign-in asked for, saying why.
    public init(resource: DiscoveredResource, server: ProviderMetadata, clientID: String?, method: Method)
        throws(ResourceSignInRefusal)
    {
        guard let authorizationServer = resource.authorizationServer else {
            throw ResourceSignInRefusal(
                .noAuthorizationServer,
                reason: "\(resource.metadata.resource.absoluteString) names no authorization server.")
        }
        let issuer = authorizationServer.absoluteString
        switch method {
        case .browser where !server.codeChallengeMethodsSupported.contains("S256"):
            throw ResourceSignInRefusal(
                .noPKCE,
                reason:
                    "\(issuer) does not say it takes PKCE with S256 (its metadata's code_challenge_methods_supported), which a sign-in through the browser needs: without it, whoever intercepts the code can redeem it."
            )
        case .device where server.endpoints[.deviceAuthorization] == nil:
            throw ResourceSignInRefusal(
                .noDeviceGrant,
                reason:
                    "\(issuer) has no device authorization endpoint (RFC 8628): sign in through the browser instead.")
        default: break
        }
        self.resource = resource.metadata.resource
        self.authorizationServer = authorizationServer
        self.scopes = Self.scopes(resource.scopes, server: server)
        self.client = try Self.client(clientID, server: server, issuer: issuer)
    }

    /// `asked`, after `openid` where `server` is an OpenID provider and `offline_access` where
    /// it offers it, each once.
    public static func scopes(_ asked: [String], server: ProviderMetadata) -> [String] {
        var scopes: [String] = []
        if server.isOpenIDProvider { scopes.append("openid") }
        if server.scopesSupported.contains("offline_access") { scopes.append("offline_access") }
        for scope in asked where !scopes.contains(scope) { scopes.append(scope) }
        return scopes
    }

    /// The scopes of a step-up sign-in, when a resource answered `insufficient_scope` asking for
    /// `asked`: those already granted and those asked, each once (SEP-835), so that the new
    /// grant does not lose what the old one allowed.
    public static func stepUp(granted: [String], asked: [String]) -> [String] {
        var scopes: [String] = []
        for scope in granted + asked where !scope.isEmpty && !scopes.contains(scope) { scopes.append(scope) }
        return scopes
    }

    private static func client(_ clientID: String?, server: ProviderMetadata, issuer: String)
        throws(ResourceSignInRefusal) -> Client
    {
        guard let clientID else {
            guard server.endpoints[.registration] != nil else {
                throw ResourceSignInRefusal(
                    .noRegistration,
                    reason:
                        "\(issuer) does not offer client registration (its metadata has no registration_endpoint): name a client it knows with --client-id."
                )
            }
            let device = server.endpoints[.deviceAuthorization] != nil ? [deviceGrantType] : []
            return .register(grantTypes: ["authorization_code", "refresh_token"] + device)
        }
        guard let url = URL(string: clientID), url.scheme == "https" || url.scheme == "http" else {
            return .named(clientID)
        }
        guard EndpointSecurity.isAcceptable(url), url.path.count > 1 else {
            throw ResourceSignInRefusal(
                .invalidClientID,
                reason:
                    "The client id \(clientID) is a URL, so it names a client metadata document: it must be https with a path (plain http to this machine only)."
            )
        }
        guard server.supportsClientIDMetadataDocuments else {
            throw ResourceSignInRefusal(
                .noMetadataDocuments,
                reason:
                    "\(issuer) does not fetch client metadata documents (its metadata has no client_id_metadata_document_supported): leave out the client id to register a client there, or give the id of one it knows."
            )
        }
        return .metadataDocument(url)
    }
}
