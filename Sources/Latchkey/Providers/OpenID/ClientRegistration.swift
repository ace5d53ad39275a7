public import Foundation

/// The client metadata a registration asks for (RFC 7591 §2). What it leaves out the provider
/// fills in with its defaults, and a provider may register less than was asked: read the
/// ``RegisteredClient`` it answers with.
public struct ClientRegistrationRequest: Sendable, Hashable {
    /// A name for people (`client_name`), shown on the provider's consent page.
    public var clientName: String?
    /// Where the provider may send the browser back (`redirect_uris`); loopback ones for a
    /// command-line tool (RFC 8252 §7.3).
    public var redirectURIs: [URL]
    /// Where the provider may send the browser after a sign-out (`post_logout_redirect_uris`).
    public var postLogoutRedirectURIs: [URL]
    /// The grants the client will use (`grant_types`).
    public var grantTypes: [String]
    /// The scopes it will ask for (`scope`); `nil` leaves them to the provider.
    public var scopes: [String]?
    /// How it authenticates at the token endpoint (`token_endpoint_auth_method`): `none` for a
    /// public client (the default: a program on a user's machine cannot keep a secret, RFC 8252
    /// §8.4), `client_secret_basic` or `client_secret_post` for a confidential one.
    public var authenticationMethod: String
    /// `native` (the default) or `web` (`application_type`, OpenID Connect Registration §2).
    public var applicationType: String?
    /// Further metadata, sent as given (`software_id`, `contacts`, …).
    public var otherFields: [String: JSONValue]

    /// Creates a registration request.
    public init(
        clientName: String? = nil, redirectURIs: [URL] = [], postLogoutRedirectURIs: [URL] = [],
        grantTypes: [String] = ["authorization_code", "refresh_token"], scopes: [String]? = nil,
        authenticationMethod: String = "none", applicationType: String? = "native",
        otherFields: [String: JSONValue] = [:]
    ) {
        self.clientName = clientName
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.grantTypes = grantTypes
        self.scopes = scopes
        self.authenticationMethod = authenticationMethod
        self.applicationType = applicationType
        self.otherFields = otherFields
    }

    /// The JSON document sent.
    var document: JSONValue {
        var fields = otherFields
        fields["redirect_uris"] = .array(redirectURIs.map { .string($0.absoluteString) })
        if !postLogoutRedirectURIs.isEmpty {
            fields["post_logout_redirect_uris"] = .array(postLogoutRedirectURIs.map { .string($0.absoluteString) })
        }
        fields["grant_types"] = .array(grantTypes.map(JSONValue.string))
        if grantTypes.contains("authorization_code") { fields["response_types"] = .array([.string("code")]) }
        fields["token_endpoint_auth_method"] = .string(authenticationMethod)
        if let clientName { fields["client_name"] = .string(clientName) }
        if let scopes { fields["scope"] = .string(scopes.joined(separator: " ")) }
        if let applicationType { fields["application_type"] = .string(applicationType) }
        return .object(fields)
    }
}

/// A client the provider registered (RFC 7591 §3.2.1). Its `description` and reflection never
/// show the client secret or the registration access token.
public struct RegisteredClient: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The client id the provider issued.
    public var clientID: String
    /// The client secret, for a confidential client.
    public var clientSecret: String?
    /// When the secret expires; `nil` when it does not (`client_secret_expires_at` 0 or absent).
    public var clientSecretExpiresAt: Date?
    /// How the client authenticates at the token endpoint, as registered.
    public var authenticationMethod: String
    /// The token for managing the registration (RFC 7592), when the provider issued one.
    public var registrationAccessToken: String?
    /// Where the registration is managed (RFC 7592), when the provider says.
    public var registrationClientURI: URL?
    /// The metadata as registered, without the secret and the registration access token.
    public var fields: [String: JSONValue]

    /// The client authentication to configure an ``OpenIDProvider`` with.
    public var authentication: ClientAuthentication {
        guard let clientSecret else { return .none }
        return authenticationMethod == "client_secret_post" ? .post(secret: clientSecret) : .basic(secret: clientSecret)
    }

    /// A client as a registration answered it, kept elsewhere and read back (to
    /// ``OpenIDProvider/unregister(_:transport:logger:)`` it later, say).
    public init(
        clientID: String, clientSecret: String? = nil, clientSecretExpiresAt: Date? = nil,
        authenticationMethod: String? = nil, registrationAccessToken: String? = nil,
        registrationClientURI: URL? = nil, fields: [String: JSONValue] = [:]
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.clientSecretExpiresAt = clientSecretExpiresAt
        self.authenticationMethod = authenticationMethod ?? (clientSecret == nil ? "none" : "client_secret_basic")
        self.registrationAccessToken = registrationAccessToken
        self.registrationClientURI = registrationClientURI
        self.fields = fields
    }

    /// Reads the provider's answer.
    init(answer fields: [String: JSONValue]) throws(ProviderError) {
        guard let clientID = fields["client_id"]?.stringValue, !clientID.isEmpty else {
            throw ProviderError(
                .invalidResponse, endpoint: .registration, reason: "The registration answer has no client_id.")
        }
        self.clientID = clientID
        clientSecret = fields["client_secret"]?.stringValue
        if let seconds = fields["client_secret_expires_at"]?.doubleValue, seconds > 0 {
            clientSecretExpiresAt = Date(timeIntervalSince1970: seconds)
        }
        authenticationMethod =
            fields["token_endpoint_auth_method"]?.stringValue ?? (clientSecret == nil ? "none" : "client_secret_basic")
        registrationAccessToken = fields["registration_access_token"]?.stringValue
        registrationClientURI = fields["registration_client_uri"]?.stringValue.flatMap(URL.init(string:))
        var kept = fields
        kept["client_secret"] = nil
        kept["registration_access_token"] = nil
        self.fields = kept
    }

    public var description: String {
        "RegisteredClient(clientID: \(clientID), authenticationMethod: \(authenticationMethod), secret: \(clientSecret == nil ? "none" : "<redacted>"))"
    }

    public var customMirror: Mirror { Mirror(self, children: ["summary": description]) }
}
