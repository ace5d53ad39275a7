public import Foundation

/// The users, clients and settings of a development provider.
///
/// The defaults are fixed so that demos, tests and documentation can rely on them: users
/// `alice` / `alice-password` and `bob` / `bob-password`; the public client `latchkey-cli`; the
/// confidential client `latchkey-confidential` with secret `latchkey-confidential-secret`.
/// A JSON file with the same shape (see ``load(from:)``) replaces them.
public struct DevProviderConfiguration: Sendable, Codable, Hashable {
    /// A user who can sign in.
    public struct User: Sendable, Codable, Hashable {
        /// The sign-in name, also the `preferred_username` claim.
        public var username: String
        /// The password.
        public var password: String
        /// The `name` claim.
        public var name: String
        /// The `email` claim.
        public var email: String
        /// The `sub` claim; the username when not set.
        public var subject: String?
        /// Claims of numbers its userinfo carries besides the standard ones, for tests of a
        /// client's number handling (`{"clearance": 9.3e18}`).
        public var numberClaims: [String: Double]?

        /// Creates a user.
        public init(
            username: String, password: String, name: String, email: String, subject: String? = nil,
            numberClaims: [String: Double]? = nil
        ) {
            self.username = username
            self.password = password
            self.name = name
            self.email = email
            self.subject = subject
            self.numberClaims = numberClaims
        }

        var sub: String { subject ?? username }
    }

    /// A registered client.
    public struct Client: Sendable, Codable, Hashable {
        /// `client_id`.
        public var clientID: String
        /// The secret of a confidential client; `nil` for a public client.
        public var clientSecret: String?
        /// Registered redirect URIs. Loopback ones (`http://127.0.0.1/…`, `http://[::1]/…`,
        /// `http://localhost/…`) match on any port (RFC 8252 §7.3); others match exactly.
        public var redirectURIs: [String]
        /// Registered post-logout redirect URIs (matched exactly, loopback on any port).
        public var postLogoutRedirectURIs: [String]
        /// The grant types the client may use.
        public var grantTypes: [String]
        /// The scopes the client may ask for.
        public var scopes: [String]
        /// The algorithm of the ID tokens issued to this client: `RS256` (default) or `ES256`.
        public var idTokenSigningAlgorithm: String?
        /// Where the provider POSTs a back-channel logout token when a session in which this
        /// client got tokens ends (OpenID Connect Back-Channel Logout 1.0); `nil` for none.
        public var backchannelLogoutURI: String?
        /// Whether the logout token carries `sid` (`backchannel_logout_session_required`); true
        /// when `nil`. Without it, the token names only `sub`: every session of the user ends.
        public var backchannelLogoutSessionRequired: Bool?

        /// Creates a client.
        public init(
            clientID: String,
            clientSecret: String? = nil,
            redirectURIs: [String],
            postLogoutRedirectURIs: [String],
            grantTypes: [String] = DevProviderConfiguration.allGrantTypes,
            scopes: [String] = DevProviderConfiguration.defaultScopes,
            idTokenSigningAlgorithm: String? = nil,
            backchannelLogoutURI: String? = nil,
            backchannelLogoutSessionRequired: Bool? = nil
        ) {
            self.backchannelLogoutURI = backchannelLogoutURI
            self.backchannelLogoutSessionRequired = backchannelLogoutSessionRequired
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.redirectURIs = redirectURIs
            self.postLogoutRedirectURIs = postLogoutRedirectURIs
            self.grantTypes = grantTypes
            self.scopes = scopes
            self.idTokenSigningAlgorithm = idTokenSigningAlgorithm
        }

        /// Whether the client has no secret (and so must use PKCE).
        public var isPublic: Bool { clientSecret == nil }
    }

    /// Every grant type the provider implements.
    public static let allGrantTypes = [
        "authorization_code", "refresh_token", "password", "urn:ietf:params:oauth:grant-type:device_code",
    ]
    /// The scopes of the default clients.
    public static let defaultScopes = ["openid", "profile", "email", "offline_access", "device_sso"]

    /// The users.
    public var users: [User]
    /// The clients.
    public var clients: [Client]
    /// Lifetime of access tokens, in seconds (short ones make expiry tests fast).
    public var accessTokenLifetime: Int
    /// Lifetime of ID tokens, in seconds.
    public var idTokenLifetime: Int
    /// Lifetime of refresh tokens, in seconds.
    public var refreshTokenLifetime: Int
    /// Lifetime of device secrets, in seconds.
    public var deviceSecretLifetime: Int
    /// Whether a refresh gives a new refresh token and retires the old one (on by default).
    public var rotateRefreshTokens: Bool
    /// The polling interval the device authorization endpoint asks for, in seconds.
    public var devicePollingInterval: Int
    /// How long a device code is valid, in seconds.
    public var deviceCodeLifetime: Int
    /// How long a rotated-out signing key stays in the JWKS, in seconds.
    public var keyGracePeriod: Int
    /// Discovery keys left out of the OpenID configuration but kept in the RFC 8414
    /// authorization-server metadata, as some providers publish them (for example
    /// `["revocation_endpoint", "introspection_endpoint"]`). None by default.
    public var omittedFromOpenIDConfiguration: [String]
    /// Whether the password grant returns an ID token (on by default; many providers' does not).
    public var passwordGrantIssuesIDToken: Bool
    /// Whether a rotated-out refresh token that comes back revokes its whole grant, as RFC 9700
    /// §4.14.2 advises (on by default), at the token endpoint or the revocation endpoint. Off,
    /// the replay is only refused with `invalid_grant`, and revoking a rotated-out refresh token
    /// does nothing (RFC 7009 §2.2: it is no longer a valid token).
    public var revokesGrantOnRefreshReplay: Bool
    /// The realm of the Ping journeys (PingAM's REST API): journeys at
    /// `/json/realms/root/realms/REALM/authenticate`, its OAuth issuer at
    /// `/oauth2/realms/root/realms/REALM`. `alpha` by default, as on Advanced Identity Cloud.
    public var realm: String
    /// The name of the journey sessions' header and cookie, as `serverinfo` gives it. `nil`
    /// (the default): a random one each run, as Advanced Identity Cloud has.
    public var sessionCookieName: String?
    /// Whether anyone may register a client (RFC 7591) at `/register`, advertised as
    /// `registration_endpoint` (on by default). Registered clients live as long as the provider.
    public var clientRegistration: Bool
    /// How long clients may keep the OpenID configuration and the key set, in seconds: the
    /// `max-age` of their `Cache-Control` (60 by default).
    public var documentMaxAge: Int
    /// The protected resources the provider serves beside itself, with their metadata (RFC 9728):
    /// `/resource` by default.
    public var protectedResources: [ProtectedResource]

    /// The realm unless one is configured: `alpha`.
    public static let defaultRealm = "alpha"

    /// Creates a configuration.
    public init(
        users: [User],
        clients: [Client],
        accessTokenLifetime: Int = 300,
        idTokenLifetime: Int = 300,
        refreshTokenLifetime: Int = 86_400,
        deviceSecretLifetime: Int = 2_592_000,
        rotateRefreshTokens: Bool = true,
        devicePollingInterval: Int = 5,
        deviceCodeLifetime: Int = 600,
        keyGracePeriod: Int = 3_600,
        omittedFromOpenIDConfiguration: [String] = [],
        passwordGrantIssuesIDToken: Bool = true,
        revokesGrantOnRefreshReplay: Bool = true,
        realm: String = DevProviderConfiguration.defaultRealm,
        sessionCookieName: String? = nil,
        clientRegistration: Bool = true,
        documentMaxAge: Int = 60,
        protectedResources: [ProtectedResource] = [ProtectedResource(path: "/resource")]
    ) {
        self.users = users
        self.clients = clients
        self.accessTokenLifetime = accessTokenLifetime
        self.idTokenLifetime = idTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.deviceSecretLifetime = deviceSecretLifetime
        self.rotateRefreshTokens = rotateRefreshTokens
        self.devicePollingInterval = devicePollingInterval
        self.deviceCodeLifetime = deviceCodeLifetime
        self.keyGracePeriod = keyGracePeriod
        self.omittedFromOpenIDConfiguration = omittedFromOpenIDConfiguration
        self.passwordGrantIssuesIDToken = passwordGrantIssuesIDToken
        self.revokesGrantOnRefreshReplay = revokesGrantOnRefreshReplay
        self.realm = realm
        self.sessionCookieName = sessionCookieName
        self.clientRegistration = clientRegistration
        self.documentMaxAge = documentMaxAge
        self.protectedResources = protectedResources
    }

    /// The default users and clients.
    public static var `default`: DevProviderConfiguration {
        let redirects = ["http://127.0.0.1/callback", "http://localhost/callback"]
        let postLogout = ["http://127.0.0.1/logged-out"]
        return DevProviderConfiguration(
            users: [
                User(username: "alice", password: "alice-password", name: "Alice Example", email: "alice@example.com"),
                User(username: "bob", password: "bob-password", name: "Bob Example", email: "bob@example.com"),
            ],
            clients: [
                Client(clientID: "latchkey-cli", redirectURIs: redirects, postLogoutRedirectURIs: postLogout),
                Client(
                    clientID: "latchkey-confidential", clientSecret: "latchkey-confidential-secret",
                    redirectURIs: redirects, postLogoutRedirectURIs: postLogout),
            ])
    }

    /// Reads a configuration from a JSON file. Keys are the property names; every setting but
    /// `users` and `clients` may be left out and takes its default.
    ///
    /// ```json
    /// {"users": [{"username": "carol", "password": "pw", "name": "Carol", "email": "carol@example.com"}],
    ///  "clients": [{"clientID": "app", "redirectURIs": ["http://127.0.0.1/callback"],
    ///               "postLogoutRedirectURIs": [], "grantTypes": ["password", "refresh_token"],
    ///               "scopes": ["openid", "offline_access"]}],
    ///  "accessTokenLifetime": 60}
    /// ```
    public static func load(from url: URL) throws -> DevProviderConfiguration {
        try JSONDecoder().decode(DevProviderConfiguration.self, from: Data(contentsOf: url))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = DevProviderConfiguration(users: [], clients: [])
        users = try container.decode([User].self, forKey: .users)
        clients = try container.decode([Client].self, forKey: .clients)
        func value(_ key: CodingKeys, _ fallback: Int) throws -> Int {
            try container.decodeIfPresent(Int.self, forKey: key) ?? fallback
        }
        accessTokenLifetime = try value(.accessTokenLifetime, defaults.accessTokenLifetime)
        idTokenLifetime = try value(.idTokenLifetime, defaults.idTokenLifetime)
        refreshTokenLifetime = try value(.refreshTokenLifetime, defaults.refreshTokenLifetime)
        deviceSecretLifetime = try value(.deviceSecretLifetime, defaults.deviceSecretLifetime)
        rotateRefreshTokens = try container.decodeIfPresent(Bool.self, forKey: .rotateRefreshTokens) ?? true
        devicePollingInterval = try value(.devicePollingInterval, defaults.devicePollingInterval)
        deviceCodeLifetime = try value(.deviceCodeLifetime, defaults.deviceCodeLifetime)
        keyGracePeriod = try value(.keyGracePeriod, defaults.keyGracePeriod)
        omittedFromOpenIDConfiguration =
            try container.decodeIfPresent([String].self, forKey: .omittedFromOpenIDConfiguration) ?? []
        passwordGrantIssuesIDToken =
            try container.decodeIfPresent(Bool.self, forKey: .passwordGrantIssuesIDToken) ?? true
        revokesGrantOnRefreshReplay =
            try container.decodeIfPresent(Bool.self, forKey: .revokesGrantOnRefreshReplay) ?? true
        realm = try container.decodeIfPresent(String.self, forKey: .realm) ?? Self.defaultRealm
        sessionCookieName = try container.decodeIfPresent(String.self, forKey: .sessionCookieName)
        clientRegistration = try container.decodeIfPresent(Bool.self, forKey: .clientRegistration) ?? true
        documentMaxAge = try value(.documentMaxAge, defaults.documentMaxAge)
        protectedResources =
            try container.decodeIfPresent([ProtectedResource].self, forKey: .protectedResources)
            ?? defaults.protectedResources
    }

    /// The path of the realm's OAuth issuer below the provider's base URL.
    var realmIssuerPath: String { "/oauth2/realms/root/realms/\(realm)" }

    func user(named username: String) -> User? { users.first { $0.username == username } }
    func user(subject: String) -> User? { users.first { $0.sub == subject } }
    func client(_ id: String) -> Client? { clients.first { $0.clientID == id } }
}

extension DevProviderConfiguration.Client {
    enum CodingKeys: String, CodingKey {
        case clientID, clientSecret, redirectURIs, postLogoutRedirectURIs, grantTypes, scopes, idTokenSigningAlgorithm
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        clientID = try container.decode(String.self, forKey: .clientID)
        clientSecret = try container.decodeIfPresent(String.self, forKey: .clientSecret)
        redirectURIs = try container.decodeIfPresent([String].self, forKey: .redirectURIs) ?? []
        postLogoutRedirectURIs = try container.decodeIfPresent([String].self, forKey: .postLogoutRedirectURIs) ?? []
        grantTypes =
            try container.decodeIfPresent([String].self, forKey: .grantTypes) ?? DevProviderConfiguration.allGrantTypes
        scopes = try container.decodeIfPresent([String].self, forKey: .scopes) ?? DevProviderConfiguration.defaultScopes
        idTokenSigningAlgorithm = try container.decodeIfPresent(String.self, forKey: .idTokenSigningAlgorithm)
    }
}
