import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyPostgres
import LatchkeySQLite
import Logging
import PostgresNIO

/// What the tool needs of a store, whichever backend keeps it: credentials, the outbox, and
/// the sealing of the providers' client secrets under the store's key.
protocol HomeStorage: CredentialStorage, OutboxStorage {
    /// Seals `secret` under the store's key for `purpose` (base64 text).
    func seal(secret: String, purpose: String) throws(StorageError) -> String
    /// Opens what ``seal(secret:purpose:)`` sealed, or nil when the key or purpose differ.
    func open(sealedSecret: String, purpose: String) -> String?
}

extension SQLiteCredentialStorage: HomeStorage {}
extension PostgresCredentialStorage: HomeStorage {}

/// The PostgreSQL stores this process has opened, one client (with its connection pool) each,
/// running for the rest of the process.
actor PostgresStores {
    static let shared = PostgresStores()

    private var opened: [String: PostgresCredentialStorage] = [:]

    /// The store at `home`'s database URL, opened with `home`'s key.
    func storage(for home: Home) async throws -> PostgresCredentialStorage {
        guard let url = home.databaseURL else {
            throw StorageError(.databaseFailure, reason: "No PostgreSQL store is configured.", retryable: false)
        }
        if let storage = opened[url] { return storage }
        let key = try await home.resolvedKey()
        var configuration = try PostgresCredentialStorage.clientConfiguration(url: url)
        // A command waits for its store a few seconds at most: $LATCHKEY_DATABASE_TIMEOUT, else 5.
        let seconds = CLINumbers.seconds(
            ProcessInfo.processInfo.environment["LATCHKEY_DATABASE_TIMEOUT"], fallback: 5, in: 0.1...86_400)
        let timeout = CLINumbers.duration(seconds: seconds)
        configuration.options.connectTimeout = timeout
        let client = PostgresClient(
            configuration: configuration, backgroundLogger: Home.logger ?? .disabled("latchkey.postgres"))
        // The client runs until the process ends; a command is short-lived.
        Task { await client.run() }
        let storage = try await PostgresCredentialStorage.open(
            client: client, key: key, logger: Home.logger, timeout: timeout)
        opened[url] = storage
        return storage
    }
}
