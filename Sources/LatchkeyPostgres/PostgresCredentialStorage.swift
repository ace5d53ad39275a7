public import Crypto
import Foundation
public import Latchkey
public import Logging
import NIOConcurrencyHelpers
public import PostgresNIO

/// Credential storage in PostgreSQL, for a fleet of server instances that share their users'
/// credentials.
///
/// - Tokens are sealed with AES-GCM under a 256-bit key the caller passes in (from a secret
///   manager): the database never holds a token in the clear. What indexes and listings read
///   (subject, username, email, issuer, tags) is in the clear and bound into the seal.
/// - The lease of a credential is a row (holder, date it runs out) that its holder renews while
///   it works and every write under the lease checks: one change at a time per credential
///   fleet-wide, through any connection path (directly, or through PgBouncer in session or
///   transaction mode), and a dead instance holds nobody up for more than 15 seconds.
/// - Outbox entries are claimed with `FOR UPDATE SKIP LOCKED`, so the instances drain together
///   and each revocation is sent once; a claim runs out when its instance dies.
/// - Every change is written to a change log (identifiers only, never a token) that each
///   instance reads every 200 ms, and a ``CredentialStore`` over this storage publishes other
///   instances' changes on ``CredentialStore/changes``.
///
/// Nothing rests on a server connection's state (no session advisory lock, no `LISTEN`), so a
/// pooler may hand each statement to another connection. The `PostgresClient` must be running
/// (`client.run()`, in a service group, say).
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// async let running: Void = client.run()
/// let storage = try await PostgresCredentialStorage.open(client: client, key: key)
/// let store = CredentialStore(storage: storage)
/// ```
public final class PostgresCredentialStorage: CredentialStorage, OutboxStorage, CredentialChangeFeed {
    /// The client the storage talks through.
    public let client: PostgresClient
    /// The key the store is sealed with.
    package let sealer: Sealer
    let logger: Logger
    /// Names this storage object in its change log, so that it can skip its own changes.
    let origin = UUID().uuidString
    /// The credentials whose lease a holder of this storage has (or is taking).
    let leasesHeldHere = NIOLockedValueBox<Set<CredentialID>>([])
    /// `accessToken()`'s credentials, kept while the change log says nothing changed.
    let readCache = NIOLockedValueBox(PostgresReadCache())
    /// The one task that reads the change log, for the read cache and every subscriber of
    /// ``changesMadeElsewhere()``: started by the first token asked for or the first subscriber.
    let logReader = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// The streams of ``changesMadeElsewhere()`` the log's entries go to.
    let changeSubscribers = NIOLockedValueBox<[UUID: AsyncStream<CredentialStoreEvent>.Continuation]>([:])

    /// DPoP nonces, provider documents, web sessions, and the changes other instances make
    /// (the change log), for the whole fleet.
    public var capabilities: StorageCapabilities {
        StorageCapabilities(dpopNonces: self, providerDocuments: self, changeFeed: self, webSessions: self)
    }

    private init(client: PostgresClient, sealer: Sealer, logger: Logger) {
        self.client = client
        self.sealer = sealer
        self.logger = logger
    }

    deinit {
        logReader.withLockedValue { $0?.cancel() }
        for subscriber in changeSubscribers.withLockedValue({ $0.values }) { subscriber.finish() }
    }

    /// Opens the store in the database `client` connects to: creates or migrates its tables
    /// (under a lock, so instances starting together do not race) and checks the key.
    ///
    /// - Parameters:
    ///   - client: a running client of the database.
    ///   - key: the 256-bit key the store's tokens are sealed with.
    ///   - logger: where diagnostics go; silent by default. Token values are never logged.
    ///   - timeout: how long to wait for the server before giving up with
    ///     ``StorageError/Code/unreachable`` (the client's pool would otherwise keep trying): a
    ///     minute by default, for a fleet whose database may start after it.
    /// - Throws: ``StorageError/Code/unreachable`` when the server cannot be reached,
    ///   ``StorageError/Code/wrongKey`` when `key` is not the store's key, and
    ///   ``StorageError/Code/unsupportedSchema`` when a newer Latchkey made the schema, and
    ///   ``StorageError/Code/unsupported`` when a probe lease taken at open is not exclusive on this
    ///   connection path (a proxy or a server that does not keep PostgreSQL's row locks). Nothing
    ///   is changed in any of these cases.
    public static func open(
        client: PostgresClient, key: SymmetricKey, logger: Logger? = nil, timeout: Duration = .seconds(60)
    ) async throws(StorageError) -> PostgresCredentialStorage {
        guard key.bitCount == 256 else {
            throw StorageError(.invalidKeyFile, reason: "The key given is \(key.bitCount) bits; Latchkey needs 256.")
        }
        let logger = logger ?? .disabled("latchkey.postgres")
        let sealer = Sealer(key: key)
        let migrated = await withTaskGroup(of: Result<Bool, StorageError>?.self) { group in
            group.addTask {
                do throws(StorageError) {
                    try await PostgresSchema.migrate(client, sealer: sealer, logger: logger)
                    return .success(true)
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .success(false)
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .success(false)
        }
        switch migrated {
        case .success(true):
            try await checkLeaseExcludes(client, logger: logger)
            return PostgresCredentialStorage(client: client, sealer: sealer, logger: logger)
        case .success(false):
            throw StorageError(
                .unreachable,
                reason:
                    "The PostgreSQL store could not be opened within \(timeout): the server did not answer, or refused the user, password or database. Nothing was changed."
            )
        case .failure(let error):
            throw error
        }
    }
}
