import Foundation
import Latchkey
import LatchkeyCommandLine

extension ProviderEntry {
    /// The issuer and client of this provider's tokens.
    var identity: ProviderIdentity? {
        switch kind {
        case .openid, .cognito:
            return tokenIssuer.map { ProviderIdentity(issuer: $0, clientID: clientID) }
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
