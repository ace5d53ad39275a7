import Crypto
import Foundation
import Latchkey
public import LatchkeyPostgres
public import LatchkeyStorageTesting
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import PostgresNIO
import Testing

/// The PostgreSQL store against a real server on loopback: the shipped storage contract, the
/// errors a caller meets, what the database holds, and change events between instances.
@Suite("PostgreSQL store", .enabled(if: PostgresServer.isEnabled))
struct PostgresStorageTests {
    @Test("keeps the storage contract", arguments: PostgresServer.Route.allCases, StorageContract.checks)
    func contract(_ route: PostgresServer.Route, _ check: StorageContract.Check) async throws {
        let url = try await PostgresServer.freshDatabase(via: route)
        try await PostgresServer.withClient(url) { client in
            try await check.run {
                try await PostgresCredentialStorage.open(
                    client: client, key: SymmetricKey(size: .bits256), timeout: PostgresServer.openTimeout)
            }
        }
    }

    @Test("keeps the takeover checks of the storage contract", arguments: StorageContract.takeoverChecks)
    func takeover(_ check: StorageContract.TakeoverCheck) async throws {
        let url = try await PostgresServer.freshDatabase()
        try await PostgresServer.withClient(url) { client in
            try await check.run {
                try await PostgresCredentialStorage.open(
                    client: client, key: SymmetricKey(size: .bits256), timeout: PostgresServer.openTimeout)
            }
        }
    }

    @Test("a wrong key is refused and changes nothing; the right key still opens everything")
    func wrongKey() async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = SymmetricKey(size: .bits256)
        let stored = try await PostgresServer.withStore(key: key, url: url) { store, _, _ in
            try await store.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice"))
        }
        let error = await #expect(throws: StorageError.self) {
            try await PostgresServer.withStore(key: SymmetricKey(size: .bits256), url: url) { _, _, _ in }
        }
        #expect(error?.code == .wrongKey)
        try await PostgresServer.withStore(key: key, url: url) { store, _, _ in
            let reread = try await store.credential(for: stored.id)
            #expect(reread?.token.refreshToken == stored.token.refreshToken)
        }
    }

    @Test("a schema newer than the code is refused, and nothing is touched")
    func newerSchema() async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = SymmetricKey(size: .bits256)
        let stored = try await PostgresServer.withStore(key: key, url: url) { store, _, client in
            let stored = try await store.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice"))
            try await client.query("UPDATE latchkey_schema SET version = 99")
            return stored
        }
        let error = await #expect(throws: StorageError.self) {
            try await PostgresServer.withStore(key: key, url: url) { _, _, _ in }
        }
        #expect(error?.code == .unsupportedSchema)
        #expect(error?.description.contains("99") == true)
        try await PostgresServer.withClient(url) { client in
            try await client.query("UPDATE latchkey_schema SET version = 2")
        }
        try await PostgresServer.withStore(key: key, url: url) { store, _, _ in
            let reread = try await store.credential(for: stored.id)
            #expect(reread != nil)
        }
    }

    @Test("a server that cannot be reached is a clear, retryable error within the time given")
    func unreachable() async throws {
        // A port nothing listens on: bound, then closed.
        let error = await #expect(throws: StorageError.self) {
            try await PostgresServer.withClient("postgres://latchkey@127.0.0.1:1/latchkey", timeout: .seconds(1)) {
                client in
                _ = try await PostgresCredentialStorage.open(
                    client: client, key: SymmetricKey(size: .bits256), timeout: .seconds(2))
            }
        }
        #expect(error?.code == .unreachable)
        #expect(error?.isRetryable == true)
    }

    @Test("the database holds no token in the clear, and the change log only identifiers")
    func nothingInTheClear() async throws {
        try await PostgresServer.withStore { store, storage, client in
            let stored = try await store.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice"))
            _ = try await store.setTags(["team": "blue"], for: stored.id)
            _ = try await store.update(stored.id) { $0.token.accessToken = "UNDER-LEASE-\(UUID())" }
            let entry = OutboxEntry(
                provider: stored.token.provider, action: .revoke(.refreshToken),
                payload: .token("QUEUED-SECRET-\(UUID())"),
                account: "alice", tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(),
                lastError: nil)
            try await storage.enqueue([entry], limit: 10)
            let current = try #require(try await store.credential(for: stored.id))
            let secrets = [
                stored.token.accessToken, stored.token.refreshToken, stored.token.idToken,
                current.token.accessToken, entry.payload.token,
            ]
            .compactMap { $0 }

            var rows: [String] = []
            for table in [
                "latchkey_credential", "latchkey_outbox", "latchkey_setting", "latchkey_lease", "latchkey_change",
            ] {
                for try await row in try await client.query(
                    PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM \(table) t")
                ).decode(String.self) {
                    rows.append(row)
                }
            }
            #expect(rows.count >= 3)
            #expect(rows.contains { $0.contains(stored.id.rawValue) })
            for secret in secrets { #expect(!rows.contains { $0.contains(secret) }) }

            // added, default (the first account becomes the default), updated twice.
            var changes: [String] = []
            for try await (change, id) in try await client.query(
                "SELECT change, credential_id FROM latchkey_change ORDER BY seq"
            ).decode((String, String?).self) {
                #expect(id == stored.id.rawValue)
                changes.append(change)
            }
            #expect(changes == ["added", "default", "updated", "updated"])
        }
    }

    /// Two instances on a new database: A has alice's credential, and B's feed has seen a
    /// change of A's (the feed subscribes in the background), its recorder cleared since.
    static func subscribedPair(
        via route: PostgresServer.Route = .direct,
        _ body:
            @Sendable (CredentialStore, CredentialStore, PostgresClient, EventRecorder, StoredCredential)
            async throws -> Void
    ) async throws {
        let url = try await PostgresServer.freshDatabase(via: route)
        let key = SymmetricKey(size: .bits256)
        try await PostgresServer.withStore(key: key, url: url) { a, _, client in
            try await PostgresServer.withStore(key: key, url: url) { b, _, _ in
                let events = EventRecorder(b)
                let alice = try await a.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice"))
                let subscribed = try await events.wait(
                    within: .seconds(10), poke: { _ = try await a.setTags(["n": "\(UUID())"], for: alice.id) }
                ) { $0 == .updated(alice.id) }
                try #require(subscribed, "B's feed never saw A's changes")
                events.clear()
                try await body(a, b, client, events, alice)
            }
        }
    }

    @Test(
        "one instance's store publishes what another instance adds, changes, removes and makes default",
        arguments: PostgresServer.Route.allCases)
    func changesAcrossInstances(_ route: PostgresServer.Route) async throws {
        try await Self.subscribedPair(via: route) { a, b, _, events, first in
            let second = try await a.add(Fixtures.token("bob"), accountClaims: Fixtures.claims("bob"))
            try await a.setDefault(second.id)
            _ = try await a.remove(first.id)
            #expect(try await events.wait(within: .seconds(5)) { $0 == .removed(first.id) })
            // (A late answer to the subscription's pokes may come first.)
            #expect(
                events.recorded.filter { $0 != .updated(first.id) } == [
                    .added(second.id), .defaultChanged(second.id), .removed(first.id),
                ])
            // B's own changes come once, from B itself. A change of A's made after it is the
            // barrier: B's feed reads the log in order, so had B's own come back through it, it
            // would have come before A's.
            events.clear()
            _ = try await b.setTags(["by": "b"], for: second.id)
            let marker = try await a.add(Fixtures.token("carol"), accountClaims: Fixtures.claims("carol"))
            #expect(try await events.wait(within: .seconds(5)) { $0 == .added(marker.id) })
            #expect(events.recorded.filter { $0 == .updated(second.id) }.count == 1)
        }
    }

    @Test("a feed whose connections the server ended reads on, and publishes what changed meanwhile")
    func feedReconnects() async throws {
        try await Self.subscribedPair { a, _, client, events, alice in
            // The server ends every other connection to the database, as a failover or a
            // restart would; A's change is made while B's feed has no connection.
            try await client.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """
            )
            // A's own pool lost its connections too: its change is tried again while the store
            // says the server could not be reached (nothing was written), as a caller would.
            for attempt in 1... {
                do {
                    _ = try await a.setTags(["after": "failover"], for: alice.id)
                    break
                } catch let error as StorageError where error.code == .unreachable && attempt < 50 {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // The pool connects again with its own backoff, which a loaded suite stretches.
            #expect(try await events.wait(within: TestTiming.scaled(.seconds(30))) { $0 == .updated(alice.id) })
            #expect(!events.recorded.contains(.changesMayHaveBeenMissed), "the log kept what was made meanwhile")
        }
    }
}

/// Records what a store's `changes` publishes, for a test to wait on.
final class EventRecorder: Sendable {
    private final class Events: Sendable {
        let list = NIOLockedValueBox<[CredentialStoreEvent]>([])
    }
    private let events = Events()
    private let task: Task<Void, Never>

    init(_ store: CredentialStore) {
        let changes = store.changes
        let events = self.events
        task = Task { for await event in changes { events.list.withLockedValue { $0.append(event) } } }
    }

    deinit { task.cancel() }

    /// Everything recorded so far.
    var recorded: [CredentialStoreEvent] { events.list.withLockedValue { $0 } }

    /// Waits until an event that `matches` has been recorded, calling `poke` every 200 ms
    /// meanwhile (a feed subscribes in the background: poke until it sees something).
    /// - Returns: whether it came within `timeout`.
    @discardableResult
    func wait(
        within timeout: Duration, poke: (() async throws -> Void)? = nil,
        for matches: (CredentialStoreEvent) -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
        var poked = ContinuousClock.now - .seconds(1)
        while ContinuousClock.now < deadline {
            if recorded.contains(where: matches) { return true }
            if let poke, ContinuousClock.now - poked >= .milliseconds(200) {
                poked = .now
                try await poke()
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return recorded.contains(where: matches)
    }

    func clear() { events.list.withLockedValue { $0 = [] } }
}

/// Tokens with distinctive secret values that tests search for.
enum Fixtures {
    static let provider = ProviderIdentity(issuer: "https://issuer.example", clientID: "latchkey-postgres-tests")

    static func token(_ user: String) -> Token {
        let token = Token(
            accessToken: "SECRET-ACCESS-\(user)-\(UUID().uuidString)",
            refreshToken: "SECRET-REFRESH-\(user)-\(UUID().uuidString)",
            issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600), provider: provider)
        for secret in [token.accessToken, token.refreshToken].compactMap({ $0 }) { TraceLog.register(secret: secret) }
        return token
    }

    static func claims(_ user: String) -> [String: JSONValue] {
        ["sub": .string("sub-\(user)"), "preferred_username": .string(user), "email": .string("\(user)@example.com")]
    }
}

extension PostgresCredentialStorage: LeaseTakeover {
    public func takeOverHeldLeases() async throws { try await handLeasesToAnotherHolder() }
}
