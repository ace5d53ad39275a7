import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import LatchkeyStorageTesting
import LatchkeyTestSupport
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

/// The outbox against the development provider: what an offline sign-out queues, how a drain
/// sends it, backs off, gives up, and reports what it cannot read.
@Suite("Outbox")
struct OutboxTests: SignOutDevicesTest {
    // MARK: The outbox

    @Test("an offline sign-out, then the server comes back, the outbox drains, every token is inactive")
    func outboxDrains() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("signout-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("credentials.sqlite").path
        let clock = TestClock()
        let storeA = CredentialStore(
            storage: try SQLiteCredentialStorage(path: path), logger: TraceLog.logger("store"), clock: clock)
        try await withDevices(clock: clock, storeA: storeA) { devices in
            let credential = try await devices.signIn(devices.a)
            let token = try await credential.token
            _ = try await devices.provider.metadata()
            devices.dev.faults.set(.status(503, retryAfter: 120), for: .revocation)
            let signOutStarted = clock.date
            let result = await devices.a.signOut(.current)
            guard case .partial = result else {
                Issue.record("expected partial, got \(result)")
                return
            }
            #expect(result.failures.allSatisfy { $0.status == .queued && $0.isRetryable })
            #expect(try await devices.a.all().isEmpty)

            // The outbox is durable: a new process opening the store sees it, sealed.
            let reopened = CredentialStore(
                storage: try SQLiteCredentialStorage(path: path), logger: TraceLog.logger("store"), clock: clock)
            await reopened.register(devices.provider)
            let entries = try await reopened.outboxEntries()
            #expect(entries.count == 3)
            // Retry-After: 120 counts from when the answer came, whatever the machine's load.
            #expect(
                entries.allSatisfy { $0.nextAttemptAt.timeIntervalSince(signOutStarted) >= 119.999 },
                "\(entries.map { "\($0.action): \($0.nextAttemptAt.timeIntervalSince(signOutStarted))" })")
            #expect(entries.allSatisfy { !$0.description.contains(token.refreshToken ?? "-") })
            #expect(try await reopened.all().isEmpty)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(bytes.range(of: Data((token.refreshToken ?? "-").utf8)) == nil)

            // Not due yet: nothing is sent.
            devices.dev.faults.clear()
            let early = await reopened.drainOutbox()
            #expect(early.notDue == 3)
            #expect(early.revoked == 0)

            clock.advance(121)
            let drained = await reopened.drainOutbox()
            #expect(drained.revoked == 3)
            #expect(drained.remaining == 0)
            #expect(try await reopened.outboxEntries().isEmpty)
            for value in [token.accessToken, token.refreshToken, token.deviceSecret] {
                #expect(try await devices.isActive(value) == false)
            }
        }
    }

    @Test("a drain that fails again backs off with Retry-After; entries go only at the expiry the provider stated")
    func outboxBackoff() async throws {
        let clock = TestClock()
        try await withDevices(clock: clock) { devices in
            _ = try await devices.signIn(devices.a)
            _ = try await devices.provider.metadata()
            devices.dev.faults.isOffline = true
            _ = await devices.a.signOut(.current)
            #expect(try await devices.a.outboxEntries().count == 3)
            devices.dev.faults.isOffline = false
            devices.dev.faults.set(.status(503, retryAfter: 600), for: .revocation)
            let drainStarted = clock.date
            let again = await devices.a.drainOutbox(DrainOptions(includeNotDue: true, maximumConcurrency: 2))
            #expect(again.failed == 3)
            #expect(again.peakConcurrency == 2)
            let entries = try await devices.a.outboxEntries()
            #expect(
                entries.allSatisfy { $0.attempts == 2 && $0.nextAttemptAt.timeIntervalSince(drainStarted) >= 599.999 })
            // The access token lives 300 s, the refresh token a day (refresh_expires_in); the
            // device secret's expiry was never stated, so it is never dropped unsent.
            clock.advance(400)
            let later = await devices.a.drainOutbox()
            #expect(later.dropped == 1)
            clock.advance(86_400)
            #expect(await devices.a.drainOutbox().dropped == 1)
            clock.advance(3 * 365 * 86_400)
            #expect(await devices.a.drainOutbox().dropped == 0)
            #expect(try await devices.a.outboxEntries().map(\.action) == [.revoke(.deviceSecret)])
        }
    }

    @Test("a revocation that can be neither sent nor queued keeps the account: nothing is lost")
    func queueFails() async throws {
        try await withDevices { devices in
            let store = CredentialStore(storage: FailingOutboxStorage(), logger: TraceLog.logger("store"))
            await store.register(devices.provider)
            let credential = try await devices.signIn(store)
            let token = try await credential.token
            devices.dev.faults.set(.status(503, retryAfter: 1), for: .revocation)
            let result = await store.signOut(.current)
            guard case .failed(let error, let steps) = result else {
                Issue.record("expected failed, got \(result)")
                return
            }
            #expect(error.code == .revocationNotQueued)
            #expect(error.isRetryable)
            #expect(steps.first { $0.kind == .localRemoval }?.status == .skipped)
            #expect(try await store.all().map(\.id) == [credential.id], "the account stays")
            #expect(try await devices.isActive(token.refreshToken), "its token is still live, and still held")
            // Once the provider answers, signing out again works.
            devices.dev.faults.clear()
            guard case .complete = await store.signOut(.current) else {
                Issue.record("expected complete")
                return
            }
            #expect(try await devices.isActive(token.refreshToken) == false)
        }
    }

    @Test("a full outbox is an error that keeps the account, never a silent drop")
    func outboxFull() async throws {
        try await withDevices { devices in
            let store = CredentialStore(
                storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), outboxLimit: 2)
            await store.register(devices.provider)
            let credential = try await devices.signIn(store)
            devices.dev.faults.isOffline = true
            guard case .failed(let error, _) = await store.signOut(.current) else {
                Issue.record("expected failed: three tokens, room for two")
                return
            }
            #expect(error.code == .revocationNotQueued)
            #expect((error.underlying as? StorageError)?.code == .outboxFull)
            #expect(try await store.all().map(\.id) == [credential.id])
            // A sign-out's entries are queued in one write, all or none: nothing is left half
            // queued beside an account that stays.
            #expect(try await store.outboxEntries().isEmpty)
        }
    }

    @Test("a permanent failure stops being retried, stays listed with its reason, and goes only when dropped")
    func permanentFailure() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            _ = try await devices.provider.metadata()
            devices.dev.faults.isOffline = true
            _ = await devices.a.signOut(.current)
            devices.dev.faults.isOffline = false
            // The same client, now presenting a secret the provider refuses: invalid_client.
            let refused = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: devices.dev.issuer, clientID: "latchkey-cli", authentication: .basic(secret: "wrong"),
                    allowsPasswordGrant: true),
                transport: transport)
            await devices.a.register(refused)
            let first = await devices.a.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(first.permanent == 3)
            #expect(first.failed == 0)
            #expect(first.isClean == false)
            devices.dev.faults.resetCounters()
            let second = await devices.a.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(second.permanent == 3)
            #expect(devices.dev.faults.count(.revocation) == 0, "not tried again")
            let entries = try await devices.a.outboxEntries()
            #expect(entries.allSatisfy { $0.failedPermanently && $0.lastError?.contains("invalid_client") == true })
            let dropped = try #require(entries.first)
            #expect(try await devices.a.dropOutboxEntry(dropped.id))
            #expect(try await devices.a.outboxEntries().count == 2)
            #expect(try await devices.a.dropOutboxEntry(dropped.id) == false)
        }
    }

    @Test("a damaged outbox row is reported by id while the healthy ones are revoked")
    func damagedOutboxRow() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("signout-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("credentials.sqlite").path
        let store = CredentialStore(storage: try SQLiteCredentialStorage(path: path), logger: TraceLog.logger("store"))
        try await withDevices(storeA: store) { devices in
            let credential = try await devices.signIn(store)
            let token = try await credential.token
            devices.dev.faults.isOffline = true
            _ = await store.signOut(.current)
            devices.dev.faults.isOffline = false
            let victim = try #require(try await store.outboxEntries().first { $0.action == .revoke(.deviceSecret) })
            let sqlite = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/sqlite3"),
                [path, "UPDATE outbox SET issuer = 'https://attacker.example' WHERE id = '\(victim.id)'"])
            try #require(sqlite.status == 0, "\(sqlite.stderr)")
            let report = await store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(report.revoked == 2)
            #expect(report.damaged.map(\.id) == [victim.id.uuidString])
            #expect(report.isClean == false)
            #expect(try await devices.isActive(token.refreshToken) == false)
            #expect(try await store.dropOutboxEntry(victim.id))
            #expect(try await store.damagedRecords().isEmpty)
        }
    }

    @Test("the outbox drainer service drains at start and then on its clock, and stops on graceful shutdown")
    func drainerService() async throws {
        let clock = TestClock()
        try await withDevices(clock: clock) { devices in
            _ = try await devices.signIn(devices.a)
            let token = try await devices.a.all().first?.token
            _ = try await devices.provider.metadata()
            devices.dev.faults.isOffline = true
            _ = await devices.a.signOut(.current)
            let reports = Reports()
            let drainer = OutboxDrainer(
                store: devices.a, every: .seconds(60), options: DrainOptions(includeNotDue: true), clock: clock
            ) { report in reports.add(report) }
            let group = ServiceGroup(services: [drainer], logger: Logger(label: "test.drainer"))
            let running = Task { try await group.run() }
            // At start, still offline: it fails and stays queued.
            while reports.count < 1 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(reports.last?.failed == 3)
            devices.dev.faults.isOffline = false
            // Nothing more until its clock says so.
            while clock.sleeperCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(reports.count == 1)
            clock.advance(60)
            while reports.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(reports.last?.revoked == 3)
            #expect(try await devices.isActive(token?.refreshToken) == false)
            await group.triggerGracefulShutdown()
            try await running.value
        }
    }

    /// The drainer's reports, as they come.
    final class Reports: Sendable {
        private let all = NIOLockedValueBox<[DrainReport]>([])
        func add(_ report: DrainReport) { all.withLockedValue { $0.append(report) } }
        var count: Int { all.withLockedValue { $0.count } }
        var last: DrainReport? { all.withLockedValue { $0.last } }
    }

    @Test("backoff doubles from the base, is capped, jittered, and never below Retry-After")
    func backoffShape() {
        let backoff = OutboxBackoff(base: 10, maximum: 100)
        #expect(backoff.delay(afterAttempts: 1, retryAfter: nil, jitter: 1) == 10)
        #expect(backoff.delay(afterAttempts: 3, retryAfter: nil, jitter: 1) == 40)
        #expect(backoff.delay(afterAttempts: 10, retryAfter: nil, jitter: 1) == 100)
        #expect(backoff.delay(afterAttempts: 3, retryAfter: nil, jitter: 0.5) == 20)
        #expect(backoff.delay(afterAttempts: 1, retryAfter: .seconds(300), jitter: 1) == 300)
    }
}
