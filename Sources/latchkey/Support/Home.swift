import ArgumentParser
import Crypto
import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeySQLite
import Logging
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A configured provider, as `providers.json` keeps it.
struct ProviderEntry: Codable, Sendable {
    enum Kind: String, Codable, Sendable {
        case openid, cognito
        case pingJourney = "ping-journey"
    }

    var name: String
    var kind: Kind
    var clientID: String
    // OpenID
    var issuer: String?
    /// A client secret as earlier versions kept it, in the clear; sealed on the next open.
    var clientSecret: String?
    /// The client secret, sealed with the store's key (base64).
    var sealedClientSecret: String?
    var scopes: [String]?
    var authMethod: String?
    var endpoints: [String: String]?
    /// Whether `login --username … --password-stdin` may use the password grant (off unless asked).
    var allowsPasswordGrant: Bool?
    // Cognito
    var region: String?
    var userPoolID: String?
    var endpointURL: String?
    // Ping journeys
    var serverURL: String?
    var realm: String?
    var journey: String?
    var cookieName: String?
    var redirectURI: String?
    // Tools
    /// The git hosts whose credentials are this provider's access tokens (`credential git`).
    var gitHosts: [String]?

    /// The issuer and client of this provider's tokens.
    var identity: ProviderIdentity? {
        switch kind {
        case .openid:
            return issuer.map { ProviderIdentity(issuer: $0, clientID: clientID) }
        case .cognito:
            guard let region, let userPoolID else { return nil }
            return ProviderIdentity(
                issuer: "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)", clientID: clientID)
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

/// One Latchkey home (one "device"): the credential store and the configured providers.
struct Home {
    /// The tag that names the provider a credential was signed in with.
    static let providerTag = "latchkey.provider"

    let folder: URL
    /// The PostgreSQL store's URL (`--store`, else `$LATCHKEY_DATABASE_URL`), or nil for the
    /// SQLite store in the home folder.
    let databaseURL: String?
    /// Where the store's key comes from.
    let keySource: SQLiteCredentialStorage.KeySource
    /// The descriptor the key is read from, when it is: read once per process (a pipe cannot be
    /// read twice), then the key is kept in memory.
    private var keyDescriptor: Int32?
    var databasePath: String { folder.appendingPathComponent("credentials.sqlite").path }
    var providersFile: URL { folder.appendingPathComponent("providers.json") }

    /// `--home`, else `$LATCHKEY_HOME`, else `$XDG_CONFIG_HOME/latchkey`, else `~/.config/latchkey`.
    /// The key: `--key-fd`, else `--key-file`, else `$LATCHKEY_KEY_FILE`, else the key file beside
    /// the database.
    init(explicit: String?, keyFile: String? = nil, keyDescriptor: Int32? = nil, store: String? = nil) {
        let environment = ProcessInfo.processInfo.environment
        databaseURL = store ?? environment["LATCHKEY_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if let explicit {
            folder = URL(fileURLWithPath: explicit)
        } else if let home = environment["LATCHKEY_HOME"], !home.isEmpty {
            folder = URL(fileURLWithPath: home)
        } else if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            folder = URL(fileURLWithPath: config).appendingPathComponent("latchkey")
        } else {
            folder = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/latchkey")
        }
        if let keyDescriptor {
            keySource = .fileDescriptor(keyDescriptor)
            self.keyDescriptor = keyDescriptor
        } else if let file = keyFile ?? environment["LATCHKEY_KEY_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            keySource = .keyFile(file)
        } else {
            keySource = .keyFileBesideDatabase
        }
    }

    // MARK: Providers

    /// The configured providers, their client secrets still sealed: from `providers.json` in the
    /// home, or from the PostgreSQL store, where every instance sees the same list.
    func providers() async throws -> [ProviderEntry] {
        let data: Data
        let source: String
        if databaseURL != nil {
            source = "The PostgreSQL store's provider list"
            do {
                guard let stored = try await PostgresStores.shared.storage(for: self).document(named: "providers")
                else { return [] }
                data = stored
            } catch let error as StorageError {
                throw CLIError.failed("The provider list cannot be read: \(error)")
            }
        } else {
            source = providersFile.path
            guard FileManager.default.fileExists(atPath: providersFile.path) else { return [] }
            data = try Data(contentsOf: providersFile)
        }
        do {
            return try JSONDecoder().decode([ProviderEntry].self, from: data)
        } catch {
            throw CLIError.input("\(source) cannot be read: it is not a Latchkey provider list.")
        }
    }

    /// Writes the provider list. In the home: to a new file created 0600 (never wider, even for
    /// a moment), then renamed over the old one, so a crash leaves the old list or the new one.
    /// In a PostgreSQL store: in one statement.
    func saveProviders(_ providers: [ProviderEntry]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(providers)
        if databaseURL != nil {
            do {
                try await PostgresStores.shared.storage(for: self).setDocument(data, named: "providers")
            } catch let error as StorageError {
                throw CLIError.failed("The provider list cannot be written: \(error)")
            }
            return
        }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = providersFile.path + ".\(UUID().uuidString).tmp"
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(temporary), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: .ownerReadWrite)
            defer { try? descriptor.close() }
            _ = try descriptor.writeAll(data)
        } catch {
            unlink(temporary)
            throw CLIError.failed("\(providersFile.path) cannot be written: \(error)")
        }
        guard rename(temporary, providersFile.path) == 0 else {
            unlink(temporary)
            throw CLIError.failed("\(providersFile.path) cannot be written.")
        }
    }

    /// The provider named `name`, or the only one when `name` is nil.
    func provider(named name: String?) async throws -> ProviderEntry {
        let all = try await providers()
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

    /// The key source to open the store with: a descriptor's key is read once, then reused.
    func resolvedKeySource() throws -> SQLiteCredentialStorage.KeySource {
        guard let keyDescriptor else { return keySource }
        return .key(
            try Self.descriptorKey.withLock { cached in
                if let cached { return cached }
                do {
                    let key = try SQLiteCredentialStorage.readKey(fromDescriptor: keyDescriptor)
                    cached = key
                    return key
                } catch {
                    throw CLIError.failed("The key cannot be read from file descriptor \(keyDescriptor): \(error)")
                }
            })
    }

    private static let descriptorKey = Mutex<SymmetricKey?>(nil)

    /// The store's key as a value, for a store that keeps no key file of its own (PostgreSQL):
    /// from `--key-fd`, `--key-file` or `$LATCHKEY_KEY_FILE`.
    func resolvedKey() throws -> SymmetricKey {
        switch try resolvedKeySource() {
        case .key(let key):
            return key
        case .keyFile(let path):
            do {
                return try SQLiteCredentialStorage.readKey(fromFile: path)
            } catch {
                throw CLIError.failed("The store's key cannot be read: \(error)")
            }
        default:
            throw CLIError.input(
                "A PostgreSQL store needs its key: set LATCHKEY_KEY_FILE (or --key-file, --key-fd) to a file holding it. Make one with `latchkey key generate FILE`."
            )
        }
    }

    /// The storage of this home, opened with its key: the PostgreSQL store at ``databaseURL``,
    /// else the SQLite store in the home folder.
    func openStorage() async throws -> any HomeStorage {
        if databaseURL != nil {
            do {
                return try await PostgresStores.shared.storage(for: self)
            } catch let error as StorageError {
                throw CLIError.failed("The credential store cannot be opened: \(error)")
            }
        }
        return try await openSQLiteStorage()
    }

    /// The SQLite storage of this home, opened with its key.
    func openSQLiteStorage() async throws -> SQLiteCredentialStorage {
        let source = try resolvedKeySource()
        do {
            return try await SQLiteCredentialStorage.open(path: databasePath, key: source, logger: Self.logger)
        } catch {
            throw CLIError.failed("The credential store cannot be opened: \(error)")
        }
    }

    /// The purpose a provider's client secret is sealed for.
    static func secretPurpose(_ name: String) -> String { "client-secret:\(name)" }

    /// The client secret of `entry`, opened with the store's key.
    func clientSecret(of entry: ProviderEntry, storage: any HomeStorage) throws -> String? {
        if let sealed = entry.sealedClientSecret {
            guard let secret = storage.open(sealedSecret: sealed, purpose: Self.secretPurpose(entry.name)) else {
                throw CLIError.failed(
                    "The client secret of the provider \(entry.name) does not open with the store's key; add the provider again."
                )
            }
            return secret
        }
        return entry.clientSecret
    }

    /// Seals every client secret still kept in the clear (written by an earlier version).
    func sealLegacySecrets(_ entries: [ProviderEntry], storage: any HomeStorage) async throws -> [ProviderEntry] {
        guard entries.contains(where: { $0.clientSecret != nil }) else { return entries }
        var sealed = entries
        for index in sealed.indices {
            guard let secret = sealed[index].clientSecret else { continue }
            sealed[index].sealedClientSecret = try storage.seal(
                secret: secret, purpose: Self.secretPurpose(sealed[index].name))
            sealed[index].clientSecret = nil
        }
        try await saveProviders(sealed)
        return sealed
    }

    /// The store, with every configured provider registered.
    func openStore(requestTimeout: Duration = .seconds(15)) async throws -> Session {
        let storage = try await openStorage()
        let store = CredentialStore(storage: storage, logger: Self.logger)
        var clients: [String: any IdentityProvider] = [:]
        for entry in try await sealLegacySecrets(providers(), storage: storage) {
            let client = try Self.client(
                for: entry, secret: clientSecret(of: entry, storage: storage), timeout: requestTimeout)
            clients[entry.name] = client
            await store.register(client)
        }
        return Session(home: self, store: store, clients: clients)
    }

    static func client(for entry: ProviderEntry, secret: String?, timeout: Duration) throws -> any IdentityProvider {
        let options = HTTPTransportOptions(timeout: timeout)
        let transport = AsyncHTTPClientTransport.shared
        switch entry.kind {
        case .openid:
            guard let issuerText = entry.issuer, let issuer = URL(string: issuerText) else {
                throw CLIError.input("The provider \(entry.name) has no valid issuer.")
            }
            var endpoints: [EndpointKind: URL] = [:]
            for (kind, url) in entry.endpoints ?? [:] {
                if let kind = EndpointKind(rawValue: kind), let url = URL(string: url) { endpoints[kind] = url }
            }
            return OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: issuer, clientID: entry.clientID, authentication: entry.authentication(secret: secret),
                    scopes: entry.scopes ?? ["openid", "profile", "email", "offline_access"], endpoints: endpoints,
                    requestOptions: options, allowsPasswordGrant: entry.allowsPasswordGrant ?? false),
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
        case .pingJourney:
            guard let configuration = entry.pingConfiguration(secret: secret, options: options) else {
                throw CLIError.input("The Ping journey provider \(entry.name) lacks its server URL or realm.")
            }
            return PingJourneyProvider(configuration: configuration, transport: transport, logger: logger)
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
        let all: [AccountSummary]
        do {
            all = try await store.accounts()
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
        // Its tokens, read and checked against the sealed metadata (a listing is not).
        do {
            guard let credential = try await store.credential(for: match.id) else {
                throw CLIError.input("No account matches \(reference).")
            }
            return credential
        } catch let error as StorageError {
            throw CLIError.failed("The account \(match.id) cannot be read: \(error)")
        }
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
        providerName(of: AccountSummary(stored))
    }

    /// The name of the provider an account came from.
    func providerName(of account: AccountSummary) -> String? {
        account.metadata.tags[Home.providerTag]
            ?? clients.first {
                $0.value.identity
                    == ProviderIdentity(issuer: account.metadata.issuer, clientID: account.metadata.clientID)
            }?.key
    }

    /// Retries the outbox entries that are due, within a short time bound, before network work.
    func retryDueOutbox() async {
        _ = await store.drainOutbox(DrainOptions(timeLimit: .seconds(3)))
    }
}

/// What a command that works on one account starts with.
struct AccountContext {
    let session: Session
    let stored: StoredCredential
    let credential: Credential
}

extension GlobalOptions {
    /// Opens the store, finds the account `reference` names (the default one when nil), and
    /// gets its handle; first retries what is due in the outbox when `retryingOutbox` says so
    /// for this account (a command about to go to the network).
    func account(_ reference: String?, retryingOutbox: (StoredCredential) -> Bool = { _ in true }) async throws
        -> AccountContext
    {
        let session = try await location.openStore()
        let stored = try await session.account(reference)
        if retryingOutbox(stored) { await session.retryDueOutbox() }
        return AccountContext(session: session, stored: stored, credential: try await session.credential(stored))
    }
}
