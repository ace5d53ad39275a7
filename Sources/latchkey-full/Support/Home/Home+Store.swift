import ArgumentParser
import Crypto
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeySQLite
import Logging
import NIOConcurrencyHelpers
import SystemPackage

extension Home {
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

    /// The SQLite storage of this home, opened with its key; a key rotation cut short is settled
    /// (see ``settlePendingProviders(with:discardingStale:)``).
    func openSQLiteStorage() async throws -> SQLiteCredentialStorage {
        let source = try await resolvedKeySource()
        let storage: SQLiteCredentialStorage
        do {
            storage = try await SQLiteCredentialStorage.open(path: databasePath, key: source, logger: Self.logger)
        } catch {
            throw CLIError.failed("The credential store cannot be opened: \(error)")
        }
        if hasPendingProviders { try settlePendingProviders(with: storage) }
        return storage
    }

    /// The purpose a provider's client secret is sealed for.
    static func secretPurpose(_ name: String) -> String { ProviderEntry.secretPurpose(name) }

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

    /// The store, with every configured provider registered. A provider that cannot be used (its
    /// client secret does not open, its entry is incomplete) is left out and named in
    /// ``Session/unusable``: it stops only the commands that need it.
    func openStore(requestTimeout: Duration = .seconds(15)) async throws -> Session {
        let storage = try await openStorage()
        let store = CredentialStore(storage: storage, logger: Self.logger)
        var clients: [String: ProviderClient] = [:]
        var unusable: [String: CLIError] = [:]
        for entry in try await sealLegacySecrets(providers(), storage: storage) {
            do {
                let client = try Self.client(
                    for: entry, secret: clientSecret(of: entry, storage: storage), timeout: requestTimeout)
                clients[entry.name] = client
                await store.register(client.identityProvider)
            } catch let error as CLIError {
                Self.logger?.notice("a provider cannot be used", metadata: ["provider": "\(entry.name)"])
                unusable[entry.name] = error
            }
        }
        return Session(home: self, store: store, clients: clients, unusable: unusable)
    }

    static func client(for entry: ProviderEntry, secret: String?, timeout: Duration) throws -> ProviderClient {
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
            return .openID(
                OpenIDProvider(
                    configuration: OpenIDProviderConfiguration(
                        issuer: issuer, clientID: entry.clientID, authentication: entry.authentication(secret: secret),
                        scopes: entry.scopes ?? ["openid", "profile", "email", "offline_access"], endpoints: endpoints,
                        requestOptions: options, allowsPasswordGrant: entry.allowsPasswordGrant ?? false,
                        dpop: entry.dpop == true ? .required : .never,
                        resources: (entry.resources ?? []).compactMap(URL.init(string:))),
                    transport: transport, logger: logger))
        case .cognito:
            guard let region = entry.region, let pool = entry.userPoolID else {
                throw CLIError.input("The Cognito provider \(entry.name) lacks its region or user pool.")
            }
            return .cognito(
                CognitoProvider(
                    configuration: CognitoConfiguration(
                        region: region, userPoolID: pool, clientID: entry.clientID,
                        endpoint: entry.endpointURL.flatMap(URL.init(string:)), requestOptions: options),
                    transport: transport, logger: logger))
        case .pingJourney:
            guard let configuration = entry.pingConfiguration(secret: secret, options: options) else {
                throw CLIError.input("The Ping journey provider \(entry.name) lacks its server URL or realm.")
            }
            return .pingJourney(PingJourneyProvider(configuration: configuration, transport: transport, logger: logger))
        }
    }
}
