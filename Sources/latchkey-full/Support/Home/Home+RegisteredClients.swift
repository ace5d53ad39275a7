import Foundation
import Latchkey
import LatchkeyCommandLine

extension AuthMethod {
    /// How a client the provider registered authenticates: as it said, `basic` when it gave a
    /// secret and named no method, `none` without a secret.
    init(registered client: RegisteredClient) {
        if client.authenticationMethod == "client_secret_post" {
            self = .post
        } else {
            self = client.clientSecret == nil ? .none : .basic
        }
    }
}

extension Home {
    /// The provider `name`'s client secret and registration access token (RFC 7592), sealed
    /// with the store's key for providers.json, which never holds them in the clear. The store
    /// is opened only when there is something to seal.
    func sealed(secret: String?, registrationAccessToken: String?, provider name: String) async throws
        -> (secret: String?, registrationAccessToken: String?)
    {
        guard secret != nil || registrationAccessToken != nil else { return (nil, nil) }
        let storage = try await openStorage()
        return (
            try secret.map { try storage.seal(secret: $0, purpose: Home.secretPurpose(name)) },
            try registrationAccessToken.map {
                try storage.seal(secret: $0, purpose: ProviderEntry.registrationTokenPurpose(name))
            }
        )
    }
}
