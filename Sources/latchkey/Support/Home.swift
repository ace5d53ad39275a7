import ArgumentParser
import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeySQLite
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A configured provider, as `providers.json` keeps it.
struct ProviderEntry: Codable, Sendable {
    enum Kind: String, Codable, Sendable { case openid, cognito }

    var name: String
    var kind: Kind
    var clientID: String
    // OpenID
    var issuer: String?
    var clientSecret: String?
    var scopes: [String]?
    var authMethod: String?
    var endpoints: [String: String]?
    // Cognito
    var region: String?
    var userPoolID: String?
    var endpointURL: String?

    /// The issuer and client of this provider's tokens.
    var identity: ProviderIdentity? {
        switch kind {
        case .openid:
            return issuer.map { ProviderIdentity(issuer: $0, clientID: clientID) }
        case .cognito:
            guard let region, let userPoolID else { return nil }
            return ProviderIdentity(
                issuer: "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)", clientID: clientID)
        }
    }
}

/// One Latchkey home (one "device"): the credential store and the configured providers.
struct Home {
    /// The tag that names the provider a credential was signed in with.
    static let providerTag = "latchkey.provider"

    let folder: URL
    var databasePath: String { folder.appendingPathComponent("credentials.sqlite").path }
    var providersFile: URL { folder.appendingPathComponent("providers.json") }

    /// `--home`, else `$LATCHKEY_HOME`, else `$XDG_CONFIG_HOME/latchkey`, else `~/.config/latchkey`.
    init(explicit: String?) {
        let environment = ProcessInfo.processInfo.environment
        if let explicit {
            folder = URL(fileURLWithPath: explicit)
        } else if let home = environment["LATCHKEY_HOME"], !home.isEmpty {
            folder = URL(fileURLWithPath: home)
        } else if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            folder = URL(fileURLWithPath: config).appendingPathComponent("latchkey")
        } else {
            folder = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/latchkey")
        }
    }

    // MARK: Providers

    func providers() throws -> [ProviderEntry] {
        guard FileManager.default.fileExists(atPath: providersFile.path) else { return [] }
        do {
            return try JSONDecoder().decode([ProviderEntry].self, from: Data(contentsOf: providersFile))
        } catch {
            throw CLIError.input("\(providersFile.path) cannot be read: it is not a Latchkey provider list.")
        }
    }

    func saveProviders(_ providers: [ProviderEntry]) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(providers)
        // Client secrets live here: the file is private to its owner.
        let temporary = providersFile.appendingPathExtension("tmp")
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw CLIError.failed("\(providersFile.path) cannot be written.") }
        // rename(2) replaces the old list atomically: a crash leaves the old or the new one.
        guard rename(temporary.path, providersFile.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CLIError.failed("\(providersFile.path) cannot be written.")
        }
    }

    /// The provider named `name`, or the only one when `name` is nil.
    func provider(named name: String?) throws -> ProviderEntry {
        let all = try providers()
        if let name {
            guard let entry = all.first(where: { $0.name == name }) else {
                throw CLIError.input("No provider is named \(name); see `latchkey provider list`.")
            }
            return entry
        }
        guard all.count == 1, let only = all.first else {
            throw CLIError.input(
                all.isEmpty
                    ? "No provider is configured; add one with `latchkey provider add`."
                    : "Several providers are configured; choose one with --provider.")
        }
        return only
    }

    // MARK: The store

    /// Diagnostics on standard error at the level `LATCHKEY_LOG` names (`debug`, `trace`, …);
    /// nothing when it is unset. Token values never reach a log line.
    static let logger: Logger? = {
        guard let name = ProcessInfo.processInfo.environment["LATCHKEY_LOG"], !name.isEmpty,
            let level = Logger.Level(rawValue: name.lowercased())
        else { return nil }
        var logger = Logger(label: "latchkey") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = level
        logger[metadataKey: "pid"] = "\(getpid())"
        return logger
    }()

    /// The store, with every configured provider registered.
    func openStore(requestTimeout: Duration = .seconds(15)) async throws -> Session {
        let store: CredentialStore
        do {
            store = try await CredentialStore.sqlite(at: databasePath, logger: Self.logger)
        } catch {
            throw CLIError.failed("The credential store cannot be opened: \(error)")
        }
        var clients: [String: any IdentityProvider] = [:]
        for entry in try providers() {
            let client = try Self.client(for: entry, timeout: requestTimeout)
            clients[entry.name] = client
            await store.register(client)
        }
        return Session(home: self, store: store, clients: clients)
    }

    static func client(for entry: ProviderEntry, timeout: Duration) throws -> any IdentityProvider {
        let options = HTTPTransportOptions(timeout: timeout)
        let transport = AsyncHTTPClientTransport.shared
        switch entry.kind {
        case .openid:
            guard let issuerText = entry.issuer, let issuer = URL(string: issuerText) else {
                throw CLIError.input("The provider \(entry.name) has no valid issuer.")
            }
            let authentication: ClientAuthentication
            switch (entry.authMethod ?? (entry.clientSecret == nil ? "none" : "basic"), entry.clientSecret) {
            case ("basic", let secret?): authentication = .basic(secret: secret)
            case ("post", let secret?): authentication = .post(secret: secret)
            default: authentication = .none
            }
            var endpoints: [EndpointKind: URL] = [:]
            for (kind, url) in entry.endpoints ?? [:] {
                if let kind = EndpointKind(rawValue: kind), let url = URL(string: url) { endpoints[kind] = url }
            }
            return OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: issuer, clientID: entry.clientID, authentication: authentication,
                    scopes: entry.scopes ?? ["openid", "profile", "email", "offline_access"], endpoints: endpoints,
                    requestOptions: options),
                transport: transport, logger: logger)
        case .cognito:
            guard let region = entry.region, let pool = entry.userPoolID else {
                throw CLIError.input("The Cognito provider \(entry.name) lacks its region or user pool.")
            }
            return CognitoProvider(
                configuration: CognitoConfiguration(
                    region: region, userPoolID: pool, clientID: entry.clientID,
                    endpoint: entry.endpointURL.flatMap(URL.init(string:)), requestOptions: options),
                transport: transport, logger: logger)
        }
    }
}

/// An open home: its store and its provider clients.
struct Session {
    let home: Home
    let store: CredentialStore
    let clients: [String: any IdentityProvider]

    /// The account `reference` names (id, username or email), or the default account.
    func account(_ reference: String?) async throws -> StoredCredential {
        let all: [StoredCredential]
        do {
            all = try await store.all()
        } catch {
            throw CLIError.failed("The credential store cannot be read: \(error)")
        }
        guard let reference else {
            guard let current = try? await store.default else {
                throw CLIError.input("No default account; name one, or choose one with `latchkey use`.")
            }
            return current
        }
        let matches = all.filter {
            $0.id.rawValue == reference || $0.metadata.preferredUsername == reference || $0.metadata.email == reference
        }
        guard let match = matches.first else { throw CLIError.input("No account matches \(reference).") }
        guard matches.count == 1 else {
            throw CLIError.input("\(matches.count) accounts match \(reference); use the account id.")
        }
        return match
    }

    /// The live handle of a stored credential, through the provider it came from.
    func credential(_ stored: StoredCredential) async throws -> Credential {
        guard let provider = await store.provider(for: stored.token.provider) else {
            throw CLIError.input(
                "The provider of \(stored.metadata.displayName ?? stored.id.rawValue) is no longer configured.")
        }
        return await store.credential(stored.id, provider: provider)
    }

    /// The name of the provider a credential came from.
    func providerName(of stored: StoredCredential) -> String? {
        stored.metadata.tags[Home.providerTag]
            ?? clients.first { $0.value.identity == stored.token.provider }?.key
    }

    /// Retries the outbox entries that are due, within a short time bound, before network work.
    func retryDueOutbox() async {
        _ = await store.drainOutbox(DrainOptions(timeLimit: .seconds(3)))
    }
}
