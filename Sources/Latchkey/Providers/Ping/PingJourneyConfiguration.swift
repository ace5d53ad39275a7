public import Foundation

/// How to reach a PingAM or PingOne Advanced Identity Cloud realm as one OAuth client that signs
/// in through a journey.
public struct PingJourneyConfiguration: Sendable, Hashable {
    /// AM's base URL, e.g. `https://openam-example.forgeblocks.com/am`: journeys are below
    /// `json/`, OAuth below `oauth2/`.
    public var serverURL: URL
    /// The realm: `alpha`, `/customers/europe` for a sub-realm, or `root` (or `/`) for the top level.
    public var realm: String
    /// The journey (authentication tree) to walk, e.g. `Login`.
    public var journey: String
    /// The OAuth client identifier.
    public var clientID: String
    /// How the OAuth client authenticates.
    public var authentication: ClientAuthentication
    /// The session header's (and cookie's) name. `nil`: asked of AM's `serverinfo` once. It is
    /// `iPlanetDirectoryPro` on a default PingAM, and a random string on Advanced Identity Cloud.
    public var cookieName: String?
    /// The redirect URI registered for the client (``defaultRedirectURI`` unless set). Nothing
    /// opens it: the authorization code is read from AM's redirect.
    public var redirectURI: URL
    /// The scopes asked for.
    public var scopes: [String]
    /// The ID token signature algorithms accepted.
    public var idTokenAlgorithms: Set<JWSAlgorithm>
    /// Clock skew tolerated on ID token times, in seconds.
    public var leeway: TimeInterval
    /// Limits of every request.
    public var requestOptions: HTTPTransportOptions

    /// Creates a configuration.
    public init(
        serverURL: URL,
        realm: String,
        journey: String = "Login",
        clientID: String,
        authentication: ClientAuthentication = .none,
        cookieName: String? = nil,
        redirectURI: URL? = nil,
        scopes: [String] = ["openid", "profile", "email", "offline_access"],
        idTokenAlgorithms: Set<JWSAlgorithm> = IDTokenVerifier.defaultAlgorithms,
        leeway: TimeInterval = 60,
        requestOptions: HTTPTransportOptions = HTTPTransportOptions()
    ) {
        self.serverURL = serverURL
        self.realm = realm
        self.journey = journey
        self.clientID = clientID
        self.authentication = authentication
        self.cookieName = cookieName
        self.redirectURI = redirectURI ?? Self.defaultRedirectURI
        self.scopes = scopes
        self.idTokenAlgorithms = idTokenAlgorithms
        self.leeway = leeway
        self.requestOptions = requestOptions
    }

    /// The realm's path as AM's URLs spell it: `realms/root/realms/alpha`, or `realms/root`
    /// for the top level.
    public var realmPath: String {
        var parts = realm.split(separator: "/").map(String.init)
        if parts.first == "root" { parts.removeFirst() }
        return (["realms/root"] + parts.map { "realms/\($0)" }).joined(separator: "/")
    }

    /// The OAuth issuer of the realm: `{serverURL}/oauth2/{realmPath}`. Its discovery document
    /// is below it.
    public var issuer: URL { base.appending(path: "oauth2/\(realmPath)") }

    /// The realm's journey endpoint, without its query.
    package var authenticateURL: URL { base.appending(path: "json/\(realmPath)/authenticate") }

    /// The realm's sessions endpoint, without its query.
    package var sessionsURL: URL { base.appending(path: "json/\(realmPath)/sessions") }

    /// AM's `serverinfo`, which names the session cookie.
    package var serverInfoURL: URL { base.appending(path: "json/serverinfo/*") }

    /// The server URL without a trailing slash.
    private var base: URL {
        let text = serverURL.absoluteString
        return text.hasSuffix("/") ? URL(string: String(text.dropLast())) ?? serverURL : serverURL
    }

    /// The OAuth side, as a standards-based OpenID provider sees it.
    var openID: OpenIDProviderConfiguration {
        OpenIDProviderConfiguration(
            issuer: issuer, clientID: clientID, authentication: authentication, scopes: scopes,
            idTokenAlgorithms: idTokenAlgorithms, leeway: leeway, requestOptions: requestOptions)
    }

    /// The default redirect URI, `http://127.0.0.1/callback`.
    public static let defaultRedirectURI = URL(string: "http://127.0.0.1/callback") ?? URL(filePath: "/callback")
}
