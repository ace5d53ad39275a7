import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// `provider add --register`: a new client at the provider (RFC 7591 dynamic client
/// registration) instead of one named with `--client-id`.
struct RegistrationOptions: ParsableArguments {
    @Flag(
        help:
            "Register a new client with the provider (RFC 7591 dynamic client registration) instead of naming one with --client-id; the provider must advertise a registration_endpoint."
    )
    var register = false
    @Option(
        help:
            "With --register: the name the provider shows for the client (default: latchkey; this machine's name is sent only when given here)."
    )
    var clientName: String?
    @Flag(
        help:
            "With --register: a confidential client, whose secret the provider issues and the store keeps sealed (default: a public client, as RFC 8252 advises for programs on a user's machine)."
    )
    var confidential = false
    @Flag(
        help:
            "With --register: read the initial access token a provider may require (RFC 7591 §3.1) from standard input."
    )
    var initialAccessTokenStdin = false

    func validate(clientID: String?, openID: Bool, secretStdin: Bool) throws {
        guard register else {
            guard clientName == nil, !confidential, !initialAccessTokenStdin else {
                throw ValidationError(
                    "--client-name, --confidential and --initial-access-token-stdin go with --register.")
            }
            guard clientID != nil else {
                throw ValidationError(
                    "--client-id is needed (or, for an OpenID provider, --register for a new client).")
            }
            return
        }
        guard openID else { throw ValidationError("--register is for OpenID providers (--issuer).") }
        guard clientID == nil else { throw ValidationError("Choose --client-id or --register, not both.") }
        guard !secretStdin else {
            throw ValidationError(
                "With --register the provider issues the client secret: leave out --client-secret-stdin.")
        }
    }

    /// The registration these options ask for.
    var request: ClientRegistration {
        ClientRegistration(
            clientName: clientName, confidential: confidential, initialAccessTokenStdin: initialAccessTokenStdin)
    }

    /// Deletes the client `entry` registered (RFC 7592 §2.3) with its sealed registration
    /// access token, or says why it cannot be.
    static func unregisterClient(of entry: ProviderEntry, home: Home) async throws {
        guard let uri = entry.registrationClientURI.flatMap(URL.init(string:)),
            let sealed = entry.sealedRegistrationAccessToken
        else {
            throw CLIError.input(
                "\(entry.name)'s client was not registered by `provider add --register`, or its provider gave no registration access token (RFC 7592): there is nothing to delete it with. Remove the provider without --unregister."
            )
        }
        guard
            let token = try await home.openStorage().open(
                sealedSecret: sealed, purpose: ProviderEntry.registrationTokenPurpose(entry.name))
        else {
            throw CLIError.failed(
                "\(entry.name)'s registration access token does not open with the store's key; nothing was deleted.")
        }
        do {
            try await OpenIDProvider.unregister(
                RegisteredClient(
                    clientID: entry.clientID, registrationAccessToken: token, registrationClientURI: uri),
                transport: AsyncHTTPClientTransport.shared)
        } catch {
            throw CLIError.failed(
                "The client \(entry.clientID) was not deleted at the provider: \(error). The provider stays configured."
            )
        }
    }
}
