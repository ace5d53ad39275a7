import Crypto
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyPostgres
import PostgresNIO

/// The fleet store's figures, against the PostgreSQL server at `url` (a database of its own is
/// created for the run and dropped afterwards), named `label.…` (`postgres` directly,
/// `postgres.pgbouncer_transaction` through PgBouncer in transaction mode). Instances are stores
/// with clients (and connection pools) of their own in this process.
func postgresFigures(url: String, label: String = "postgres") async throws {
    let name = "latchkey_bench_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
    try await createDatabase(name, at: url)
    var components = URLComponents(string: url)
    components?.path = "/\(name)"
    guard let database = components?.string else { return }
    defer { Task { try? await dropDatabase(name, at: url) } }
    let key = SymmetricKey(size: .bits256)

    // MARK: 100,000 credentials: find by email, add, remove
    try await withPostgres(database) { client in
        let storage = try await PostgresCredentialStorage.open(client: client, key: key)
        let store = CredentialStore(storage: storage)
        let total = quick ? 10_000 : 100_000
        let provider = ProviderIdentity(issuer: "https://issuer.example", clientID: "bench")
        func token(_ index: Int) -> Token {
            Token(
                accessToken: "access-\(index)-\(UUID())", refreshToken: "refresh-\(index)-\(UUID())",
                issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600), provider: provider)
        }
        func claims(_ index: Int) -> [String: JSONValue] {
            ["sub": .string("sub-\(index)"), "email": .string("user\(index)@example.com")]
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for index in stride(from: worker, to: total, by: 16) {
                        try await store.add(token(index), accountClaims: claims(index))
                    }
                }
            }
            try await group.waitForAll()
        }
        var finds: [Double] = []
        for _ in 0..<(quick ? 200 : 1_000) {
            let email = "user\(Int.random(in: 0..<total))@example.com"
            finds.append(try await time { _ = try await store.find(.email(email)) })
        }
        await record("\(label).find_by_email.median", percentile(finds, 0.5), "ms")
        await record("\(label).find_by_email.p99", percentile(finds, 0.99), "ms")
        var adds: [Double] = []
        var added: [CredentialID] = []
        for index in 0..<(quick ? 100 : 500) {
            adds.append(
                try await time {
                    added.append(try await store.add(token(total + index), accountClaims: claims(total + index)).id)
                })
        }
        await record("\(label).add.median", percentile(adds, 0.5), "ms")
        await record("\(label).add.p99", percentile(adds, 0.99), "ms")
        var removes: [Double] = []
        for id in added { removes.append(try await time { _ = try await store.remove(id) }) }
        await record("\(label).remove.median", percentile(removes, 0.5), "ms")
        await record("\(label).remove.p99", percentile(removes, 0.99), "ms")
    }
    try await withPostgres(database) { client in
        let opened = try await time { _ = try await PostgresCredentialStorage.open(client: client, key: key) }
        await record("\(label).store_\(quick ? "10k" : "100k").open", opened, "ms")
        let storage = try await PostgresCredentialStorage.open(client: client, key: key)
        let listed = try await time { _ = try await storage.accounts() }
        await record("\(label).store_\(quick ? "10k" : "100k").list_accounts", listed, "ms")
        try await client.query("TRUNCATE latchkey_credential")
    }
    try await postgresHotPathFigures(database: database, key: key, label: label)

    // MARK: The outbox drained by 1, 2 and 4 instances; 20 ms per revocation
    let dev = try await DevProvider.start()
    dev.faults.set(.latency(milliseconds: 20), for: .revocation)
    let openID = client(dev)
    _ = try await openID.metadata()
    let entries = quick ? 500 : 2_000
    var throughputs: [Int: Double] = [:]
    for instances in [1, 2, 4] {
        let tokens = try await dev.mintRefreshTokens(count: entries)
        let throughput = try await withInstances(instances, database, key: key) { stores in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for chunk in stride(from: 0, to: entries, by: 100) {
                    group.addTask {
                        for token in tokens[chunk..<min(chunk + 100, entries)] {
                            try await stores[0].outbox.enqueue(
                                [
                                    OutboxEntry(
                                        provider: openID.identity, action: .revoke(.refreshToken),
                                        payload: .token(token),
                                        account: "bench",
                                        tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(),
                                        lastError: nil)
                                ],
                                limit: .max)
                        }
                    }
                }
                try await group.waitForAll()
            }
            for store in stores { await store.register(openID) }
            let wall = await time {
                await withTaskGroup(of: Void.self) { group in
                    for store in stores { group.addTask { _ = await store.drainOutbox() } }
                }
            }
            return Double(entries) / (wall / 1_000)
        }
        throughputs[instances] = throughput
        await record("\(label).drain.instances\(instances).per_second", throughput, "revocations/s")
    }
    await record("\(label).drain.scaling_4_over_1", (throughputs[4] ?? 0) / (throughputs[1] ?? 1), "x")

    // MARK: 4 instances × 250 callers of one expired credential
    dev.faults.clear()
    try await withInstances(4, database, key: key) { stores in
        let credential = try await openID.signIn(
            .password(username: "alice", password: "alice-password"), into: stores[0])
        _ = try await stores[0].update(credential.id) { $0.token.expiresAt = Date().addingTimeInterval(-60) }
        dev.faults.resetCounters()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores {
                let handle = await store.credential(credential.id, provider: openID)
                for _ in 0..<250 { group.addTask { _ = try await handle.accessToken() } }
            }
            try await group.waitForAll()
        }
        await record("\(label).refresh.4x250.requests", Double(dev.faults.count("token.refresh_token")), "count")
    }
    await dev.stop()

    // MARK: Change events from instance A to instance B
    try await withInstances(2, database, key: key) { stores in
        let (a, b) = (stores[0], stores[1])
        let credential = try await a.add(
            Token(
                accessToken: "a", issuedAt: Date(),
                provider: ProviderIdentity(issuer: "https://i.example", clientID: "c")))
        var changes = b.changes.makeAsyncIterator()
        // B's feed subscribes in the background: change until it sees one.
        let subscribed = Task {
            while !Task.isCancelled {
                _ = try? await a.setTags(["n": UUID().uuidString], for: credential.id)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        _ = await changes.next()
        subscribed.cancel()
        try await Task.sleep(for: .milliseconds(300))
        var latencies: [Double] = []
        for round in 0..<(quick ? 20 : 100) {
            // Skip what the subscription loop left behind.
            let start = ContinuousClock.now
            _ = try await a.setTags(["round": "\(round)"], for: credential.id)
            while let event = await changes.next() {
                if case .updated = event, ContinuousClock.now > start { break }
            }
            latencies.append(milliseconds(ContinuousClock.now - start))
        }
        await record("\(label).change_event.a_to_b.median", percentile(latencies, 0.5), "ms")
        await record("\(label).change_event.a_to_b.p99", percentile(latencies, 0.99), "ms")
    }
}

/// Creates the database `name` (a benchmark's own) on the server at `url`.
func createDatabase(_ name: String, at url: String) async throws {
    _ = try await withPostgres(url) { client in
        try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
    }
}

/// Drops the database `name`, with its connections.
func dropDatabase(_ name: String, at url: String) async throws {
    _ = try await withPostgres(url) { client in
        try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
    }
}

/// Runs `body` with a running client of the database at `url`.
func withPostgres<T: Sendable>(_ url: String, _ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
    let client = PostgresClient(configuration: try PostgresCredentialStorage.clientConfiguration(url: url))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

/// Runs `body` with `count` instances: stores over clients of their own.
@discardableResult
func withInstances<T: Sendable>(
    _ count: Int, _ url: String, key: SymmetricKey, _ body: @Sendable ([CredentialStore]) async throws -> T
) async throws -> T {
    let clients = try (0..<count).map { _ in
        PostgresClient(configuration: try PostgresCredentialStorage.clientConfiguration(url: url))
    }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        for client in clients { group.addTask { await client.run() } }
        defer { group.cancelAll() }
        var stores: [CredentialStore] = []
        for client in clients {
            stores.append(CredentialStore(storage: try await PostgresCredentialStorage.open(client: client, key: key)))
        }
        return try await body(stores)
    }
}
