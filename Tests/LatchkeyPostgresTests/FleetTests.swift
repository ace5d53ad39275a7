import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeyTestSupport
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

/// Instances of a fleet as separate processes (`latchkey-fleet-worker`), sharing one PostgreSQL
/// store, against the development provider.
@Suite("A fleet sharing a PostgreSQL store", .enabled(if: PostgresServer.isEnabled))
struct FleetTests {
    static let worker = Executables.url("latchkey-fleet-worker")

    /// A fresh store's database and key, and the environment its instances run with.
    struct Fleet {
        let url: String
        let key: KeyFile
        var environment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["LATCHKEY_DATABASE_URL"] = url
            environment["LATCHKEY_KEY_FILE"] = key.path
            return environment
        }

        static func make(via route: PostgresServer.Route = .direct) async throws -> Fleet {
            Fleet(url: try await PostgresServer.freshDatabase(via: route), key: try KeyFile())
        }

        func start(_ arguments: [String]) async throws -> ChildProcess {
            try await ChildProcess.start(FleetTests.worker, arguments, environment: environment)
        }

        func run(_ count: Int, _ arguments: [String]) async throws -> [ChildProcess.Result] {
            var instances: [ChildProcess] = []
            for _ in 0..<count { instances.append(try await start(arguments)) }
            var results: [ChildProcess.Result] = []
            for instance in instances { results.append(try await instance.finish()) }
            return results
        }
    }

    static func signIn(_ dev: DevProvider, into store: CredentialStore) async throws -> (OpenIDProvider, Credential) {
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: TraceLog.watching(AsyncHTTPClientTransport.shared), logger: TraceLog.logger("provider"))
        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: store)
        return (provider, credential)
    }

    @Test(
        "an instance killed while it holds a credential's lease holds no one up past its row's term",
        .timeLimit(.minutes(TestTiming.minutes(1))), arguments: PostgresServer.Route.allCases)
    func killedLeaseHolder(_ route: PostgresServer.Route) async throws {
        let fleet = try await Fleet.make(via: route)
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { store, storage, _ in
            let id = try await store.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice")).id
            let holder = try await fleet.start(["hold", id.rawValue])
            _ = try await holder.standardOutput(until: { $0.contains("holding") })
            // Held elsewhere, and renewed: a waiter waits, and can give up.
            let waiter = Task {
                try await storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(3_600))) { _ in }
            }
            try await Task.sleep(for: .milliseconds(300))
            waiter.cancel()
            let gaveUp = await waiter.result
            #expect(throws: StorageError.self) { try gaveUp.get() }
            holder.send(signal: SIGKILL)
            #expect(try await holder.finish().status == SIGKILL)
            // Nobody renews its row now: once its term (15 s at most) has passed by the waiter's
            // clock, the lease is taken at once.
            let later = LeaseTerms(duration: .seconds(3_600), clock: TestClock(origin: Date().addingTimeInterval(16)))
            let taken = try await storage.withCredentialLease(for: id, terms: later) { _ in true }
            #expect(taken)
        }
    }

    @Test("instances starting at once migrate one after the other")
    func migrationsAtOnce() async throws {
        let fleet = try await Fleet.make()
        let results = try await fleet.run(4, ["migrate"])
        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("migrated"))
        }
        let (rows, version) = try await PostgresServer.withClient(fleet.url) { client in
            var answer = (0, 0)
            for try await (rows, version) in try await client.query(
                "SELECT count(*)::int, max(version) FROM latchkey_schema"
            ).decode((Int, Int).self) {
                answer = (rows, version)
            }
            return answer
        }
        #expect(rows == 1)
        #expect(version == 8)  // the current schema version (PostgresSchema.migrations.count)
    }

    @Test(
        "4 instances × 250 callers of one expired credential make one refresh request",
        arguments: PostgresServer.Route.allCases)
    func oneRefreshFleetWide(_ route: PostgresServer.Route) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let fleet = try await Fleet.make(via: route)
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { store, _, _ in
            let (_, credential) = try await Self.signIn(dev, into: store)
            let id = credential.id
            _ = try await store.update(id) { $0.token.expiresAt = Date().addingTimeInterval(-60) }
            dev.faults.resetCounters()
            var instances: [ChildProcess] = []
            for _ in 0..<4 {
                instances.append(try await fleet.start(["tokens", dev.issuer.absoluteString, id.rawValue, "250"]))
            }
            for instance in instances { _ = try await instance.standardOutput { $0.contains("ready") } }
            for instance in instances { instance.write("go\n") }
            for instance in instances {
                let result = try await instance.finish()
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.contains("tokens 250 distinct 1"), "\(result.stdout)")
            }
            #expect(dev.faults.count("token.refresh_token") == 1)
            let refreshed = try await store.credential(for: id)
            #expect(refreshed?.token.isExpired() == false)
        }
        await dev.stop()
    }

    /// Queues a revocation of each of `tokens` in the outbox of `storage`.
    static func enqueue(_ tokens: [String], issuer: URL, into storage: PostgresCredentialStorage) async throws {
        let provider = ProviderIdentity(issuer: issuer.absoluteString, clientID: "latchkey-cli")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in stride(from: 0, to: tokens.count, by: 500) {
                group.addTask {
                    for token in tokens[chunk..<min(chunk + 500, tokens.count)] {
                        try await storage.enqueue(
                            [
                                OutboxEntry(
                                    provider: provider, action: .revoke(.refreshToken), payload: .token(token),
                                    account: "alice",
                                    tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(),
                                    lastError: "offline")
                            ],
                            limit: .max)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// 10,000 directly; 2,000 under the thread sanitizer, whose pass looks for races rather
    /// than volume (and runs everything several times slower), and through the poolers, where
    /// the test shows each entry goes once (the volume is the benchmark's: `latchkey-bench`).
    /// Enough for every instance to claim several batches while the others claim theirs (500
    /// under the thread sanitizer, where 2,000 took four and a half minutes). How fast a fleet
    /// drains a larger outbox is the benchmark suite's `postgres` measure, not this test's.
    static let drainCount = TestTiming.slowdown >= 4 ? 500 : 2_000

    @Test(
        "4 instances drain 2,000 queued revocations together (500 under the sanitizer), sending each once",
        arguments: PostgresServer.Route.allCases)
    func drainTogether(_ route: PostgresServer.Route) async throws {
        let drainCount = Self.drainCount
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let fleet = try await Fleet.make(via: route)
        let tokens = try await dev.mintRefreshTokens(count: drainCount)
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { store, storage, _ in
            try await Self.enqueue(tokens, issuer: dev.issuer, into: storage)
            dev.faults.resetCounters()
            let results = try await fleet.run(4, ["drain", dev.issuer.absoluteString, "120"])
            var revoked = 0
            for result in results {
                #expect(result.status == 0, "\(result.stderr)")
                let count = result.stdout.split(separator: "\n").first { $0.hasPrefix("revoked ") }
                    .flatMap { Int($0.dropFirst("revoked ".count)) }
                revoked += try #require(count, "\(result.stdout)")
                // Each instance took a share.
                #expect(count ?? 0 > 0)
            }
            #expect(revoked == drainCount)
            #expect(dev.faults.count(.revocation) == drainCount, "no revocation sent twice")
            var live = 0
            for token in tokens where await dev.isActive(token) { live += 1 }
            #expect(live == 0)
            #expect(try await store.outboxEntries().isEmpty)
        }
        await dev.stop()
    }

    @Test("an instance killed in the middle of its batch: the others finish it once its claim runs out")
    func instanceKilledMidBatch() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let fleet = try await Fleet.make()
        let tokens = try await dev.mintRefreshTokens(count: 500)
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { store, storage, _ in
            try await Self.enqueue(tokens, issuer: dev.issuer, into: storage)
            dev.faults.resetCounters()
            // It claims a batch, lets 5 revocations through, and hangs on the rest: killed there,
            // with some of the 5 answered and some perhaps still on their way.
            let doomed = try await fleet.start(["drain", dev.issuer.absoluteString, "3", "5"])
            _ = try await doomed.standardOutput { $0.contains("stalled") }
            doomed.send(signal: SIGKILL)
            #expect(try await doomed.finish().status == SIGKILL)
            // What the process sent before it died arrives, however loaded the machine: the
            // count is read once it has stood still for a (scaled) second.
            var sentByTheDead = dev.faults.count(.revocation)
            var still = ContinuousClock.now
            while ContinuousClock.now - still < TestTiming.scaled(.seconds(1)) {
                try await Task.sleep(for: .milliseconds(50))
                let now = dev.faults.count(.revocation)
                if now != sentByTheDead { (sentByTheDead, still) = (now, ContinuousClock.now) }
            }
            #expect(sentByTheDead <= 5)
            #expect(try await store.outboxEntries().count == 500, "nothing was removed unsent")

            // The survivors' own claims outlast their batches, even under the thread sanitizer: a
            // claim that ran out while its holder was still sending would let a batch go twice.
            let claim = "\(Int(3 * TestTiming.slowdown))"
            let results = try await fleet.run(3, ["drain", dev.issuer.absoluteString, claim])
            for result in results { #expect(result.status == 0, "\(result.stderr)") }
            var live = 0
            for token in tokens where await dev.isActive(token) { live += 1 }
            #expect(live == 0, "nothing lost")
            #expect(try await store.outboxEntries().isEmpty)
            // What the dead instance sent is sent again (harmless: RFC 7009 §2.2); nothing else twice.
            #expect(dev.faults.count(.revocation) == 500 + sentByTheDead)
        }
        await dev.stop()
    }

    @Test("the outbox drainer service runs unchanged on every instance: an offline sign-out's tokens die once")
    func drainerServices() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let fleet = try await Fleet.make()
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { a, _, _ in
            try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { b, _, _ in
                let (provider, credential) = try await Self.signIn(dev, into: a)
                let token = try await credential.token
                _ = try await provider.metadata()
                for store in [a, b] { await store.register(provider) }
                dev.faults.isOffline = true
                let result = await a.signOut(.current)
                guard case .partial = result else {
                    Issue.record("an offline sign-out is partial: \(result)")
                    return
                }
                let queued = try await b.outboxEntries().count
                #expect(queued == 2)
                dev.faults.isOffline = false
                dev.faults.resetCounters()
                let group = ServiceGroup(
                    services: [a, b].map {
                        OutboxDrainer(store: $0, every: .seconds(60), options: DrainOptions(includeNotDue: true))
                    },
                    logger: Logger(label: "test.drainers"))
                let running = Task { try await group.run() }
                let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(20))
                while try await !a.outboxEntries().isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                await group.triggerGracefulShutdown()
                try await running.value
                #expect(try await a.outboxEntries().isEmpty)
                #expect(dev.faults.count(.revocation) == queued, "each sent once")
                for value in [token.accessToken, token.refreshToken] {
                    #expect(await dev.isActive(try #require(value)) == false)
                }
            }
        }
        await dev.stop()
    }

    @Test(
        "a sign-out on instance A reaches instance B's changes within a second",
        arguments: PostgresServer.Route.allCases)
    func signOutReachesAnotherInstance(_ route: PostgresServer.Route) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let fleet = try await Fleet.make(via: route)
        try await PostgresServer.withStore(key: fleet.key.key, url: fleet.url) { store, _, _ in
            let (provider, credential) = try await Self.signIn(dev, into: store)
            await store.register(provider)
            let id = credential.id
            let watcher = try await fleet.start(["watch"])
            _ = try await watcher.standardOutput { $0.contains("listening") }
            // B's feed subscribes in the background: change a tag until B has seen one.
            let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(10))
            while ContinuousClock.now < deadline {
                _ = try await store.setTags(["n": UUID().uuidString], for: id)
                let seen = try await watcher.standardOutput { _ in true }
                if seen.contains("event updated \(id)") { break }
                try await Task.sleep(for: .milliseconds(200))
            }

            let result = await store.signOut(.account(id))
            let signedOut = Date().timeIntervalSince1970
            guard case .complete = result else {
                Issue.record("the sign-out was not complete: \(result)")
                return
            }
            let limit = Date().addingTimeInterval(TestTiming.slowdown * 1 + 5)
            var line: Substring?
            while Date() < limit, line == nil {
                let output = try await watcher.standardOutput { _ in true }
                line = output.split(separator: "\n").first { $0.hasPrefix("event removed \(id) ") }
                if line == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            watcher.send(signal: SIGTERM)
            _ = try await watcher.finish()
            let seenAt = try #require(line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) })
            #expect(seenAt - signedOut < 1.0 * TestTiming.slowdown, "B saw it \(seenAt - signedOut) s later")
        }
        await dev.stop()
    }
}
