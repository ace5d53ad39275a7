import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// `latchkey login --resource URL` with no provider named: the provider is found from the
/// resource itself (RFC 9728), and, where none is configured for it, the library's
/// ``ResourceSignInPlan`` decides the client, its grant types and the scopes from what the
/// resource and its server say.
extension AccountSignIn {
    /// What a resource-first sign-in found: the provider entry it added and the scopes the
    /// resource asks for.
    struct ResourceFirst {
        var provider: String
        var scopes: [String]
    }

    /// The method of this sign-in, for the plan.
    var planMethod: ResourceSignInPlan.Method { device ? .device : passwordStdin ? .password : .browser }

    /// Where a sign-in for `resource` with no provider named goes.
    enum ResourceProvider {
        /// The configured provider the resource trusts (its metadata names the issuer, or the
        /// user paired them).
        case configured(String)
        /// A provider added for the server the resource names.
        case added(ResourceFirst)
        /// The resource does not say (no metadata): the only, or default, provider's sign-in.
        case unknown
    }

    /// Finds the provider of `resource`: with none configured, the one its metadata names is
    /// added (no metadata is an error then); with some, the one it trusts
    /// (``ResourceTrust``), else one added for the server it names — so that the sign-in a
    /// refusal names (`login --resource URL`) signs in where the resource's tokens come from.
    func resourceProvider(for resource: String, home: Home) async throws -> ResourceProvider {
        guard let url = URL(string: resource) else { throw CLIError.input("--resource must be a URL: \(resource)") }
        let configured = try await home.providers()
        let found: DiscoveredResource
        do {
            found = try await ResourceDiscovery(transport: AsyncHTTPClientTransport.shared, timeout: .seconds(15))
                .discover(url)
        } catch {
            guard configured.isEmpty else { return .unknown }
            throw CLIError.failed(
                "No provider is configured, and \(resource) does not say where to sign in for it: \(error.reason) Add its provider with `latchkey provider add NAME --issuer URL --client-id ID` and sign in with --provider NAME."
            )
        }
        let trusting = configured.first { entry in
            guard let issuer = entry.issuer else { return false }
            return ResourceTrust.decide(
                resource: url, issuer: issuer, metadata: found.metadata,
                paired: (entry.resources ?? []).compactMap(URL.init(string:))
            ).isTrusted
        }
        if let trusting { return .configured(trusting.name) }
        return .added(try await addProvider(for: found, resource: resource, home: home))
    }

    /// Plans the sign-in at the server `found` names, registers a public client when the plan
    /// says so and adds it as a provider named after the server's host; says what it did on
    /// standard error.
    private func addProvider(for found: DiscoveredResource, resource: String, home: Home) async throws -> ResourceFirst
    {
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
