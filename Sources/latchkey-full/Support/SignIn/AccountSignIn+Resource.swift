import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// `latchkey login --resource URL` with no provider configured: the provider is found from the
/// resource itself (RFC 9728), and the library's ``ResourceSignInPlan`` decides the client, its
/// grant types and the scopes from what the resource and its server say.
extension AccountSignIn {
    /// What a resource-first sign-in found: the provider entry it added and the scopes the
    /// resource asks for.
    struct ResourceFirst {
        var provider: String
        var scopes: [String]
    }

    /// The method of this sign-in, for the plan.
    var planMethod: ResourceSignInPlan.Method { browser ? .browser : device ? .device : .password }

    /// Discovers `resource`'s authorization server, plans the sign-in there, registers a public
    /// client when the plan says so and adds it as a provider named after the server's host; says
    /// what it did on standard error.
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
        let plan: ResourceSignInPlan
        do {
            plan = try ResourceSignInPlan(
                resource: found, server: try await Self.metadata(of: server), clientID: clientID, method: planMethod)
        } catch let refusal as ResourceSignInRefusal {
            let reason = "Cannot sign in for \(resource): \(refusal.reason) Nothing was added."
            throw refusal.code == .invalidClientID ? CLIError.input(reason) : CLIError.failed(reason)
        }
        let name = try await freeProviderName(for: server, home: home)
        var entry = ProviderEntry(name: name, kind: .openid, clientID: "")
        entry.issuer = server.absoluteString
        entry.scopes = plan.scopes
        entry.authMethod = "none"
        entry.allowsPasswordGrant = passwordStdin ? true : nil
        entry.resources = [plan.resource.absoluteString]
        let said: String
        switch plan.client {
        case .named(let clientID):
            entry.clientID = clientID
            said = "using client \(clientID)"
        case .metadataDocument(let document):
            entry.clientID = document.absoluteString
            said = "using client \(document.absoluteString)"
        case .register(let grantTypes):
            let client = try await ClientRegistration().register(
                issuer: server.absoluteString, redirectURI: nil, scope: plan.scopes.joined(separator: " "),
                grantTypes: grantTypes + (passwordStdin ? ["password"] : []))
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
        return ResourceFirst(provider: name, scopes: plan.scopes)
    }

    /// What the authorization server `server` says of itself.
    private static func metadata(of server: URL) async throws -> ProviderMetadata {
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: server, clientID: ""),
            transport: AsyncHTTPClientTransport.shared)
        do {
            return try await provider.metadata()
        } catch {
            throw CLIError.provider(error, doing: "Reading \(server.absoluteString)'s metadata")
        }
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
