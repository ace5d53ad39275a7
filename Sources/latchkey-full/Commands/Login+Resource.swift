import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// `latchkey login --resource URL` with no provider configured: the provider is found from the
/// resource itself (RFC 9728) and a client is registered there (RFC 7591).
extension Login {
    /// What a resource-first sign-in found: the provider entry it added and the scopes the
    /// resource asks for.
    struct ResourceFirst {
        var provider: String
        var scopes: [String]
    }

    /// Discovers `resource`'s authorization server, registers a public client there and adds
    /// it as a provider named after the server's host; says what it did on standard error.
    func addProvider(discoveredFrom resource: String, home: Home) async throws -> ResourceFirst {
        guard let url = URL(string: resource) else { throw CLIError.input("--resource must be a URL: \(resource)") }
        let found: DiscoveredResource
        do {
            found = try await ResourceDiscovery(transport: AsyncHTTPClientTransport.shared, timeout: .seconds(15))
                .discover(url)
        } catch {
            throw CLIError.failed(
                "No provider is configured, and \(resource) does not say where to sign in for it: \(error.reason) Add its provider with `latchkey provider add NAME --issuer URL --client-id ID` and sign in with --provider NAME."
            )
        }
        guard let server = found.authorizationServer else {
            throw CLIError.failed("\(resource) names no authorization server.")
        }
        let name = try await freeProviderName(for: server, home: home)
        let scopes = Self.scopes(for: found)
        var entry = ProviderEntry(name: name, kind: .openid, clientID: clientID ?? "")
        entry.issuer = server.absoluteString
        entry.scopes = scopes
        entry.authMethod = "none"
        entry.allowsPasswordGrant = passwordStdin ? true : nil
        entry.resources = [found.metadata.resource.absoluteString]
        let said: String
        if let clientID {
            try await checkClientID(clientID, at: server)
            said = "using client \(clientID)"
        } else {
            let client = try await RegistrationOptions.parse([]).register(
                issuer: server.absoluteString, redirectURI: nil, scope: scopes.joined(separator: " "),
                passwordGrant: passwordStdin)
            let sealed = try await home.sealed(
                secret: client.clientSecret, registrationAccessToken: client.registrationAccessToken, provider: name)
            entry.clientID = client.clientID
            entry.authMethod = AuthMethod(registered: client).rawValue
            entry.sealedClientSecret = sealed.secret
            entry.sealedRegistrationAccessToken = sealed.registrationAccessToken
            entry.registrationClientURI = client.registrationClientURI?.absoluteString
            said = "registered client \(client.clientID) there"
        }
        try await home.saveProviders(try await home.providers() + [entry])
        Output.note("\(resource) is served by \(server.absoluteString): \(said) and added provider \(name).")
        return ResourceFirst(provider: name, scopes: scopes)
    }

    /// Checks a client id given for the discovered server: one that is a URL names a Client ID
    /// Metadata Document, which the server must say it fetches; any other is the server's own.
    private func checkClientID(_ clientID: String, at server: URL) async throws {
        guard let url = URL(string: clientID), url.scheme == "https" || url.scheme == "http" else { return }
        guard EndpointSecurity.isAcceptable(url), url.path.count > 1 else {
            throw CLIError.input(
                "--client-id \(clientID) is a URL, so it names a client metadata document: it must be https with a path (plain http to this machine only)."
            )
        }
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: server, clientID: clientID),
            transport: AsyncHTTPClientTransport.shared)
        let metadata: ProviderMetadata
        do {
            metadata = try await provider.metadata()
        } catch {
            throw CLIError.provider(error, doing: "Reading \(server.absoluteString)'s metadata")
        }
        guard metadata.supportsClientIDMetadataDocuments else {
            throw CLIError.failed(
                "\(server.absoluteString) does not fetch client metadata documents (its metadata has no client_id_metadata_document_supported): leave out --client-id to register a client there, or give the id of one it knows."
            )
        }
    }

    /// The scopes a resource-first sign-in asks for: OpenID's with a refresh token, and those the
    /// resource names (its challenge's, else its metadata's).
    static func scopes(for found: DiscoveredResource) -> [String] {
        var scopes = ["openid", "offline_access"]
        for scope in found.scopes where !scopes.contains(scope) { scopes.append(scope) }
        return scopes
    }

    /// The server's host (and port, when it has one), made unique among the providers.
    private func freeProviderName(for server: URL, home: Home) async throws -> String {
        let base = [server.host, server.port.map(String.init)].compactMap { $0 }.joined(separator: "-")
        let taken = Set(try await home.providers().map(\.name))
        var name = base.isEmpty ? "resource" : base
        var index = 2
        while taken.contains(name) {
            name = "\(base)-\(index)"
            index += 1
        }
        return name
    }
}
