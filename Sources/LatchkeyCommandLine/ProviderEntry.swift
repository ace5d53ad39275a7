/// A configured provider, as `providers.json` keeps it.
package struct ProviderEntry: Codable, Sendable {
    package enum Kind: String, Codable, Sendable {
        case openid, cognito
        case pingJourney = "ping-journey"
    }

    package var name: String
    package var kind: Kind
    package var clientID: String
    // OpenID
    package var issuer: String?
    /// A client secret as earlier versions kept it, in the clear; sealed on the next open.
    package var clientSecret: String?
    /// The client secret, sealed with the store's key (base64).
    package var sealedClientSecret: String?
    /// Where the client `provider add --register` made is managed (RFC 7592), when the provider said.
    package var registrationClientURI: String?
    /// The token that manages it (RFC 7592 §3), sealed with the store's key (base64).
    package var sealedRegistrationAccessToken: String?
    package var scopes: [String]?
    package var authMethod: String?
    package var endpoints: [String: String]?
    /// Whether `login --username … --password-stdin` may use the password grant (off unless asked).
    package var allowsPasswordGrant: Bool?
    /// Whether sign-ins bind the account's tokens to a key of its own (DPoP, RFC 9449).
    package var dpop: Bool?
    /// The resources (RFC 8707) a browser sign-in asks the grant to cover.
    package var resources: [String]?
    // Cognito
    package var region: String?
    package var userPoolID: String?
    package var endpointURL: String?
    // Ping journeys
    package var serverURL: String?
    package var realm: String?
    package var journey: String?
    package var cookieName: String?
    package var redirectURI: String?
    // Tools
    /// The git hosts whose credentials are this provider's access tokens (`credential git`).
    package var gitHosts: [String]?
    /// Whether git may get tokens for those hosts over plain http (off unless asked: git would
    /// send the token in the clear); http to this machine is always allowed.
    package var gitAllowsHTTP: Bool?

    /// An entry with its name, kind and client; every other setting starts unset.
    package init(name: String, kind: Kind, clientID: String) {
        self.name = name
        self.kind = kind
        self.clientID = clientID
    }

    /// The issuer of an OpenID or Cognito provider's tokens (a Ping journey's is its OAuth
    /// realm's, which `PingJourneyConfiguration` knows).
    package var tokenIssuer: String? {
        switch kind {
        case .openid: issuer
        case .cognito:
            region.flatMap { region in userPoolID.map { "https://cognito-idp.\(region).amazonaws.com/\($0)" } }
        case .pingJourney: nil
        }
    }

    /// The purpose a provider's client secret is sealed for, with the store's key.
    package static func secretPurpose(_ name: String) -> String { "client-secret:\(name)" }

    /// The purpose a provider's registration access token is sealed for, with the store's key.
    package static func registrationTokenPurpose(_ name: String) -> String { "registration-access-token:\(name)" }

    /// Every secret the entry keeps sealed with the store's key, with the purpose it is sealed
    /// for (a key rotation seals each again).
    package static var sealedSecrets: [(field: WritableKeyPath<ProviderEntry, String?>, purpose: (String) -> String)] {
        [(\.sealedClientSecret, secretPurpose), (\.sealedRegistrationAccessToken, registrationTokenPurpose)]
    }

    /// The tag that names the provider a credential was signed in with (set at sign-in).
    package static let tag = "cli.provider"
    /// The same, as versions before the `latchkey.` tag prefix was Latchkey's own wrote it.
    package static let legacyTag = "latchkey.provider"

    /// The name of the provider an account was signed in with, as its tags say.
    package static func name(taggedOn tags: [String: String]) -> String? {
        tags[tag] ?? tags[legacyTag]
    }
}
