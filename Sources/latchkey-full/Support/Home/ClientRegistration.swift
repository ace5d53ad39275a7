import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// A client to register with a provider (RFC 7591): what `provider add --register` asks for, and
/// what a resource-first sign-in registers (a public client named latchkey).
struct ClientRegistration {
    /// The name the provider shows (default: latchkey).
    var clientName: String?
    /// A confidential client, whose secret the provider issues.
    var confidential = false
    /// Read an initial access token (RFC 7591 §3.1) from standard input.
    var initialAccessTokenStdin = false

    /// The grant types a client added with `provider add --register` is registered for.
    static func grantTypes(passwordGrant: Bool) -> [String] {
        ["authorization_code", "refresh_token"] + (passwordGrant ? ["password"] : [])
    }

    /// Registers the client at `issuer` for `grantTypes` and returns it, or says why the provider
    /// would not.
    func register(issuer: String, redirectURI: String?, scope: String?, grantTypes: [String]) async throws
        -> RegisteredClient
    {
        guard let issuerURL = URL(string: issuer) else { throw CLIError.input("--issuer must be a URL.") }
        let token = initialAccessTokenStdin ? try readSecretFromStandardInput("initial access token") : nil
        let redirect = URL(string: redirectURI ?? "") ?? PingJourneyConfiguration.defaultRedirectURI
        // The provider shows the name to whoever administers it: nothing of this machine unless asked.
        let request = ClientRegistrationRequest(
            clientName: clientName ?? "latchkey", redirectURIs: [redirect],
            grantTypes: grantTypes,
            scopes: scope.map { $0.split(separator: " ").map(String.init) },
            authenticationMethod: confidential ? "client_secret_basic" : "none")
        let client: RegisteredClient
        do {
            client = try await OpenIDProvider.register(
                request, issuer: issuerURL, initialAccessToken: token, transport: AsyncHTTPClientTransport.shared)
        } catch  where error.code == .missingEndpoint && error.endpoint == .registration {
            throw CLIError.input(
                "\(issuer) does not offer client registration (its metadata has no registration_endpoint): register a client there and pass --client-id."
            )
        } catch {
            throw CLIError.provider(error, doing: "Registering a client")
        }
        guard confidential, client.clientSecret == nil || client.authenticationMethod == "none" else { return client }
        // Asked for a confidential client, the provider made a public one: it is not what was
        // asked for, so it is deleted again where the provider lets us, and nothing is added.
        let deleted: String
        do {
            try await OpenIDProvider.unregister(client, transport: AsyncHTTPClientTransport.shared)
            deleted = "it was deleted again"
        } catch {
            deleted = "it could not be deleted (\(error.reason)): delete the client \(client.clientID) at the provider"
        }
        throw CLIError.failed(
            "\(issuer) registered a public client (no client secret) although --confidential asked for one; \(deleted). No provider was added: register without --confidential, or configure the provider to issue secrets."
        )
    }
}
