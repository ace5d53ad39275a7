import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeySQLite

/// How a client authenticates to the provider.
enum AuthMethod: String, CaseIterable, ExpressibleByArgument {
    case none, basic, post
}

/// `latchkey provider add | list | remove | refresh`.
struct ProviderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider", abstract: "Configure the providers accounts sign in with.",
        subcommands: [Add.self, List.self, RemoveProvider.self, RefreshProvider.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Add an OpenID provider, an Amazon Cognito user pool with --cognito, or a PingAM / Advanced Identity Cloud journey with --ping-journey."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "A name for the provider.") var name: String
        @Option(help: "The issuer URL (OpenID).") var issuer: String?
        @Option(help: "The client id (or --register for a new one).")
        var clientID: String?
        @OptionGroup var registration: RegistrationOptions
        @Flag(help: "Read the client secret from standard input.")
        var clientSecretStdin = false
        @Option(name: [.customLong("scope"), .customLong("scopes")], help: "The scopes to ask for, space separated.")
        var scope: String?
        @Option(help: "Client authentication.")
        var authMethod: AuthMethod?
        @Option(
            name: .customLong("endpoint"),
            help:
                "Override one endpoint: KIND=URL, KIND one of authorization, token, revocation, introspection, userinfo, end-session, jwks, device-authorization."
        )
        var endpoints: [String] = []
        @Flag(
            help:
                "Let `login --username U --password-stdin` use the password grant: for scripts and tests only (RFC 9700 §2.4 says it must not be used)."
        )
        var allowPasswordGrant = false
        @Flag(
            help:
                "Bind each account's tokens to a key of its own (DPoP, RFC 9449): a stolen token is useless without it. git cannot send the proofs such tokens need."
        )
        var dpop = false
        @Option(
            name: .customLong("resource"),
            help:
                "A resource (RFC 8707) a browser sign-in asks access to, for `latchkey token --resource`; repeatable. Some providers issue a resource's token only for these."
        )
        var resources: [String] = []
        @Flag(help: "An Amazon Cognito user pool.") var cognito = false
        @Option(help: "The Cognito region.") var region: String?
        @Option(help: "The Cognito user pool id.") var userPoolID: String?
        @Option(help: "The Cognito API URL (an emulator, say).") var endpointURL: String?
        @Flag(
            help: "A PingAM or Advanced Identity Cloud realm, signed in to through a journey.")
        var pingJourney = false
        @Option(help: "AM's base URL, e.g. https://tenant.forgeblocks.com/am (Ping).")
        var serverURL: String?
        @Option(help: "The realm, e.g. alpha (Ping).") var realm: String?
        @Option(help: "The journey to walk, e.g. Login (Ping).") var journey: String?
        @Option(
            help: "The session header's name (Ping); asked of AM's serverinfo when left out.")
        var cookieName: String?
        @Option(
            help:
                "The redirect URI registered for the client (Ping, and --register); default http://127.0.0.1/callback.")
        var redirectURI: String?

        @Option(
            name: .customLong("git-host"),
            help:
                "A git host (HOST or HOST:PORT, as git names it) whose HTTP credentials are this provider's access tokens; repeatable. See `latchkey credential git`."
        )
        var gitHosts: [String] = []
        @Flag(
            help:
                "Answer git over plain http too (git then sends the token in the clear); http to this machine is always answered."
        )
        var gitAllowHTTP = false

        func validate() throws {
            guard !(cognito && pingJourney) else { throw ValidationError("Choose --cognito or --ping-journey.") }
            try registration.validate(
                clientID: clientID, openID: !cognito && !pingJourney, secretStdin: clientSecretStdin)
            let pingOptions =
                [serverURL, realm, journey, cookieName].contains { $0 != nil }
                || (redirectURI != nil && !registration.register)
            if pingJourney {
                guard let serverURL, let url = URL(string: serverURL), url.host != nil, realm != nil, journey != nil
                else {
                    throw ValidationError("--ping-journey needs --server-url URL, --realm REALM and --journey JOURNEY.")
                }
                guard EndpointSecurity.isAcceptable(url) else {
                    throw ValidationError("--server-url must be https (plain http only on loopback).")
                }
                guard issuer == nil, endpoints.isEmpty, !allowPasswordGrant, region == nil, userPoolID == nil, !dpop,
                    resources.isEmpty
                else {
                    throw ValidationError(
                        "--issuer, --endpoint, --allow-password-grant, --dpop, --resource and the Cognito options are not for --ping-journey."
                    )
                }
                if let redirectURI, URL(string: redirectURI)?.scheme == nil {
                    throw ValidationError("--redirect-uri must be a URI.")
                }
                return
            }
            guard !pingOptions else {
                throw ValidationError(
                    "--server-url, --realm, --journey and --cookie-name go with --ping-journey, and --redirect-uri with it or --register."
                )
            }
            if let redirectURI, URL(string: redirectURI)?.scheme == nil {
                throw ValidationError("--redirect-uri must be a URI.")
            }
            if cognito {
                guard region != nil, userPoolID != nil else {
                    throw ValidationError("--cognito needs --region and --user-pool-id.")
                }
                guard issuer == nil, endpoints.isEmpty, !allowPasswordGrant, !dpop, resources.isEmpty else {
                    throw ValidationError(
                        "--issuer, --endpoint, --allow-password-grant, --dpop and --resource are for OpenID providers, not --cognito."
                    )
                }
            } else {
                guard let issuer, let url = URL(string: issuer), url.scheme != nil, url.host != nil else {
                    throw ValidationError("--issuer must be the provider's issuer URL.")
                }
                guard EndpointSecurity.isAcceptable(url) else {
                    throw ValidationError("--issuer must be https (plain http only on loopback).")
                }
            }
            for resource in resources where !ResourceToken.isValidResource(resource) {
                throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
            }
            for endpoint in endpoints {
                let parts = endpoint.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, EndpointKind(rawValue: parts[0]) != nil, let url = URL(string: parts[1]),
                    EndpointSecurity.isRequestTarget(url)
                else {
                    throw ValidationError(
                        "--endpoint takes KIND=URL with a known KIND and an absolute http(s) URL: \(Output.safe(endpoint))"
                    )
                }
            }
        }

        func run() async throws {
            let home = global.location
            var providers = try await home.providers()
            guard !providers.contains(where: { $0.name == name }) else {
                throw CLIError.input("A provider named \(name) exists; remove it first.")
            }
            var secret = clientSecretStdin ? try readSecretFromStandardInput("client secret") : nil
            var clientID = self.clientID ?? ""
            var authMethod = self.authMethod
            var registered: RegisteredClient?
            if registration.register {
                let client = try await registration.request.register(
                    issuer: issuer ?? "", redirectURI: redirectURI, scope: scope,
                    grantTypes: ClientRegistration.grantTypes(passwordGrant: allowPasswordGrant))
                (clientID, secret, registered) = (client.clientID, client.clientSecret, client)
                authMethod = AuthMethod(registered: client)
            }
            if let authMethod, authMethod != .none, secret == nil {
                throw CLIError.input("--auth-method \(authMethod.rawValue) needs --client-secret-stdin.")
            }
            var endpointMap: [String: String] = [:]
            for endpoint in endpoints {
                let parts = endpoint.split(separator: "=", maxSplits: 1).map(String.init)
                endpointMap[parts[0]] = parts[1]
            }
            let sealed = try await home.sealed(
                secret: secret, registrationAccessToken: registered?.registrationAccessToken, provider: name)
            var entry = ProviderEntry(
                name: name, kind: cognito ? .cognito : (pingJourney ? .pingJourney : .openid), clientID: clientID)
            entry.issuer = issuer
            entry.sealedClientSecret = sealed.secret
            entry.scopes = scope.map { $0.split(separator: " ").map(String.init) }
            entry.authMethod = authMethod?.rawValue
            entry.endpoints = endpointMap.isEmpty ? nil : endpointMap
            entry.allowsPasswordGrant = allowPasswordGrant ? true : nil
            entry.dpop = dpop ? true : nil
            entry.resources = resources.isEmpty ? nil : resources
            entry.region = region
            entry.userPoolID = userPoolID
            entry.endpointURL = endpointURL
            entry.serverURL = serverURL
            entry.realm = realm
            entry.journey = journey
            entry.cookieName = cookieName
            entry.redirectURI = pingJourney ? redirectURI : nil
            entry.gitHosts = gitHosts.isEmpty ? nil : gitHosts
            entry.gitAllowsHTTP = gitAllowHTTP ? true : nil
            entry.registrationClientURI = registered?.registrationClientURI?.absoluteString
            entry.sealedRegistrationAccessToken = sealed.registrationAccessToken
            providers.append(entry)
            try await home.saveProviders(providers)
            // Queued steps for this provider that failed for good (it was gone, or misconfigured)
            // are tried again now that its configuration changed.
            var retried = 0
            if home.databaseURL != nil || FileManager.default.fileExists(atPath: home.databasePath) {
                let identity = try Home.client(for: entry, secret: secret, timeout: .seconds(15)).identityProvider
                    .identity
                let session = try await home.openStore()
                retried = try await session.reading("The outbox") { () async throws(StorageError) in
                    try await session.store.retryFailedOutboxEntries(for: identity)
                }
            }
            var fields: [String: JSONValue] = ["name": .string(name), "outboxRetried": .number(Double(retried))]
            var said = "Added provider \(name)."
            if let registered {
                said =
                    "Registered client \(registered.clientID) at \(issuer ?? "") (\(registered.clientSecret == nil ? "public" : "confidential; its secret is sealed in the store")) and added provider \(name)."
                fields["clientId"] = .string(registered.clientID)
                fields["registered"] = .bool(true)
                fields["deletable"] = .bool(entry.sealedRegistrationAccessToken != nil)
            }
            Output.report(
                global,
                "\(said)\(retried > 0 ? " \(retried) queued step(s) that had failed for good will be tried again." : "")",
                fields)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the configured providers.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let providers = try await global.location.providers()
            if global.json {
                Output.json(
                    providers.map { entry -> [String: JSONValue] in
                        var object: [String: JSONValue] = [
                            "name": .string(entry.name), "kind": .string(entry.kind.rawValue),
                            "clientId": .string(entry.clientID),
                        ]
                        if let identity = entry.identity { object["issuer"] = .string(identity.issuer) }
                        if entry.kind == .openid { object["dpop"] = .bool(entry.dpop == true) }
                        if let resources = entry.resources {
                            object["resources"] = .array(resources.map(JSONValue.string))
                        }
                        return object
                    })
                return
            }
            if providers.isEmpty { Output.line("No providers. Add one with `latchkey provider add`.") }
            for entry in providers {
                Output.row(
                    [entry.name, entry.kind.rawValue, entry.identity?.issuer ?? "?", entry.clientID]
                        + (entry.dpop == true ? ["dpop"] : []))
            }
        }
    }

    struct RemoveProvider: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a provider.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The provider's name.", completion: Completions.providers) var name: String
        @Flag(
            help:
                "Delete the client at the provider first (RFC 7592), for a client `provider add --register` made; the provider is removed only once it is deleted."
        )
        var unregister = false

        func run() async throws {
            let home = global.location
            var providers = try await home.providers()
            guard let entry = providers.first(where: { $0.name == name }) else {
                throw CLIError.input("No provider is named \(name).")
            }
            if unregister { try await RegistrationOptions.unregisterClient(of: entry, home: home) }
            providers.removeAll { $0.name == name }
            try await home.saveProviders(providers)
            // What the store kept of what providers publish goes too: a provider added again
            // under this name (fixed, say) is fetched anew.
            if let session = try? await home.openStore() {
                try? await session.store.capabilities.providerDocuments?.removeProviderDocuments()
            }
            Output.report(
                global,
                "\(unregister ? "Deleted the client \(entry.clientID) at the provider and removed" : "Removed") provider \(name). Its accounts stay stored until signed out or removed."
            )
        }
    }

    /// `latchkey provider refresh NAME`.
    struct RefreshProvider: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Fetch what a provider publishes (metadata, key set) again, instead of the store's copies.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The provider's name.", completion: Completions.providers) var name: String

        func run() async throws {
            let session = try await global.location.openStore()
            let provider = try session.client(named: name).identityProvider
            do {
                try await session.store.capabilities.providerDocuments?.removeProviderDocuments()
            } catch {
                throw CLIError.failed("The store's copies of providers' documents cannot be removed: \(error)")
            }
            do {
                try await session.store.capabilities.sharing { () async throws(ProviderError) in
                    try await provider.fetchPublishedDocuments()
                }
            } catch {
                throw CLIError.provider(error, doing: "The provider's documents were not fetched")
            }
            Output.report(global, "Fetched what \(name) publishes; the store keeps it for every process.")
        }
    }
}
