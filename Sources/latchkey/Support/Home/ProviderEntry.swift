import Foundation
import Latchkey

/// A configured provider, as `providers.json` keeps it.
struct ProviderEntry: Codable, Sendable {
    enum Kind: String, Codable, Sendable {
        case openid, cognito
        case pingJourney = "ping-journey"
    }

    var name: String
    var kind: Kind
    var clientID: String
    // OpenID
    var issuer: String?
    /// A client secret as earlier versions kept it, in the clear; sealed on the next open.
    var clientSecret: String?
    /// The client secret, sealed with the store's key (base64).
    var sealedClientSecret: String?
    var scopes: [String]?
    var authMethod: String?
    var endpoints: [String: String]?
    /// Whether `login --username … --password-stdin` may use the password grant (off unless asked).
    var allowsPasswordGrant: Bool?
    /// Whether sign-ins bind the account's tokens to a key of its own (DPoP, RFC 9449).
    var dpop: Bool?
    /// The resources (RFC 8707) a browser sign-in asks the grant to cover.
    var resources: [String]?
    // Cognito
    var region: String?
    var userPoolID: String?
    var endpointURL: String?
    // Ping journeys
    var serverURL: String?
    var realm: String?
    var journey: String?
    var cookieName: String?
    var redirectURI: String?
    // Tools
    /// The git hosts whose credentials are this provider's access tokens (`credential git`).
    var gitHosts: [String]?
    /// Whether git may get tokens for those hosts over plain http (off unless asked: git would
    /// send the token in the clear); http to this machine is always allowed.
    var gitAllowsHTTP: Bool?

    /// The issuer and client of this provider's tokens.
    var identity: ProviderIdentity? {
        switch kind {
        case .openid:
            return issuer.map { ProviderIdentity(issuer: $0, clientID: clientID) }
        case .cognito:
            guard let region, let userPoolID else { return nil }
            return ProviderIdentity(
                issuer: "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)", clientID: clientID)
        case .pingJourney:
            return pingConfiguration(secret: nil).map {
                ProviderIdentity(issuer: $0.issuer.absoluteString, clientID: clientID)
            }
        }
    }

    /// The Ping journey configuration of this entry, `nil` when it lacks its server or realm.
    func pingConfiguration(secret: String?, options: HTTPTransportOptions = HTTPTransportOptions())
        -> PingJourneyConfiguration?
    {
        guard let serverURL = serverURL.flatMap(URL.init(string:)), let realm else { return nil }
        return PingJourneyConfiguration(
            serverURL: serverURL, realm: realm, journey: journey ?? "Login", clientID: clientID,
            authentication: authentication(secret: secret), cookieName: cookieName,
            redirectURI: redirectURI.flatMap(URL.init(string:)),
            scopes: scopes ?? ["openid", "profile", "email", "offline_access"], requestOptions: options)
    }

    /// How the client authenticates: `--auth-method`, else basic when it has a secret.
    func authentication(secret: String?) -> ClientAuthentication {
        switch (authMethod ?? (secret == nil ? "none" : "basic"), secret) {
        case ("basic", let secret?): .basic(secret: secret)
        case ("post", let secret?): .post(secret: secret)
        default: .none
        }
    }
}
