import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import LatchkeyStorageTesting
import LatchkeyTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Sign-out against the development provider: the Cognito walkthrough's seven tests, the
/// accounts rules, the policies and the revocation outbox.
@Suite("Sign-out")
struct SignOutTests {
    /// Two "devices": two stores signed in to the same provider.
    struct Devices {
        let dev: DevProvider
        let provider: OpenIDProvider
        let inspector: OpenIDProvider
        let a: CredentialStore
        let b: CredentialStore

        func signIn(_ store: CredentialStore, _ user: String = "alice") async throws -> Credential {
            try await provider.signIn(.password(username: user, password: "\(user)-password"), into: store)
        }

        /// Whether `token` is active, asked of the provider. A token that was never issued is a
        /// failure of the test, not "inactive": a sign-out test must not pass on a missing token.
        func isActive(_ token: String?) async throws -> Bool {
            let token = try #require(token, "this token was never issued")
            return try await inspector.introspect(token, kind: .accessToken).active
        }

        func stop() async { await dev.stop() }
    }

    func withDevices(
        scopes: [String] = ["openid", "profile", "email", "offline_access", "device_sso"],
        clock: any LatchkeyClock = SystemClock(),
        storeA: CredentialStore? = nil,
        _ body: (Devices) async throws -> Void
    ) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", scopes: scopes, allowsPasswordGrant: true),
            transport: transport, logger: TraceLog.logger("provider"), clock: clock)
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
            transport: transport)
        let devices = Devices(
            dev: dev, provider: provider, inspector: inspector,
            a: storeA
                ?? CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock),
            b: CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock))
        await devices.a.register(provider)
        await devices.b.register(provider)
        do {
            try await body(devices)
        } catch {
            await devices.stop()
            throw error
        }
        await devices.stop()
    }

    func status(_ result: SignOutResult, _ step: String) -> SignOutStep.Status? {
        result.steps.first { $0.kind.description == step }?.status
    }

    // MARK: The walkthrough's seven tests

    @Test("1. local sign-out: complete, tokens revoked, account gone from this device")
    func localSignOut() async throws {
        try await withDevices { devices in
            let credential = try await devices.signIn(devices.a)
            let token = try await credential.token
            let result = await devices.a.signOut(.current, options: .local)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(result.signedOutLocally)
            #expect(try await devices.a.all().isEmpty)
            #expect(try await devices.a.default == nil)
            #expect(try await devices.isActive(token.accessToken) == false)
            #expect(try await devices.isActive(token.refreshToken) == false)
            #expect(try await devices.isActive(token.deviceSecret) == false)
            #expect(status(result, "local-removal") == .succeeded)
            #expect(status(result, "global-signout") == nil)
        }
    }

    @Test("2. global sign-out: complete, every device's tokens invalid")
    func globalSignOut() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            let otherToken = try await other.token
            let result = await devices.a.signOut(.current, options: .global)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(status(result, "global-signout") == .succeeded)
            #expect(status(result, "refresh") == .skipped)
            #expect(try await devices.isActive(otherToken.accessToken) == false)
            #expect(try await devices.isActive(otherToken.refreshToken) == false)
        }
    }

    @Test("the global sign-out goes before the revocations, which would kill the token it needs")
    func globalBeforeRevocations() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            // A slow global endpoint: revocations running beside it would land first.
            devices.dev.faults.set(.latency(milliseconds: 300), for: .globalSignOut)
            let result = await devices.a.signOut(.current, options: .global)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(status(result, "global-signout") == .succeeded)
            #expect(try await devices.isActive(try await other.token.refreshToken) == false)
        }
    }

    @Test("3. a cancelled sign-out changes nothing: the session stays active")
    func cancelled() async throws {
        try await withDevices { devices in
            let credential = try await devices.signIn(devices.a)
            let token = try await credential.token
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await devices.a.signOut(.current, options: .global)
            }
            let result = await task.value
            #expect(result.signedOutLocally == false)
            #expect(result.steps.isEmpty)
            #expect(try await devices.a.all().count == 1)
            #expect(try await devices.isActive(token.accessToken))
            #expect(devices.dev.faults.count(.globalSignOut) == 0)
        }
    }

    @Test(
        "4. global sign-out with no network: server-first keeps the tokens; always-local queues the global sign-out, which reaches the other device once the network is back"
    )
    func offlineGlobal() async throws {
        try await withDevices { devices in
            let credential = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            _ = try await devices.provider.metadata()
            devices.dev.faults.isOffline = true
            var options = SignOutOptions.global
            options.policy = .serverFirst
            let strict = await devices.a.signOut(.current, options: options)
            guard case .failed = strict else {
                Issue.record("expected failed, got \(strict)")
                return
            }
            #expect(strict.signedOutLocally == false)
            #expect(try await credential.token.refreshToken != nil)
            #expect(status(strict, "local-removal") == .skipped)
            #expect(strict.steps.first { $0.kind == .globalSignOut }?.isRetryable == true)

            let relaxed = await devices.a.signOut(.current, options: .global)
            guard case .partial = relaxed else {
                Issue.record("expected partial, got \(relaxed)")
                return
            }
            #expect(try await devices.a.all().isEmpty)
            #expect(status(relaxed, "global-signout") == .queued)
            #expect(status(relaxed, "revoke-refresh-token") == .queued)
            // The global sign-out and this device's three revocations, which wait for it.
            let queued = try await devices.a.outboxEntries()
            #expect(queued.count == 4)
            let global = try #require(queued.first { $0.action == .globalSignOut })
            #expect(queued.filter { $0.waitsFor == global.id }.count == 3)

            // The network is back: the drain sends the global sign-out, and the other device is
            // signed out everywhere: its tokens are dead, its next call and its refresh fail.
            let otherToken = try await other.token
            devices.dev.faults.isOffline = false
            #expect(try await devices.inspector.introspect(otherToken.refreshToken ?? "", kind: .refreshToken).active)
            let report = await devices.a.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(report.isClean, "\(report)")
            #expect(report.revoked == 4)
            #expect(try await devices.a.outboxEntries().isEmpty)
            #expect(
                try await devices.inspector.introspect(otherToken.accessToken ?? "", kind: .accessToken).active == false
            )
            #expect(
                try await devices.inspector.introspect(otherToken.refreshToken ?? "", kind: .refreshToken).active
                    == false)
            let call = await #expect(throws: ProviderError.self) { _ = try await other.userInfo() }
            #expect(call?.requiresSignIn == true)
        }
    }

    @Test("5. global sign-out with an expired access token refreshes first, then signs out")
    func expiredAccessToken() async throws {
        let clock = TestClock()
        try await withDevices(clock: clock) { devices in
            _ = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            clock.advance(600)
            let result = await devices.a.signOut(.current, options: .global)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(status(result, "refresh") == .succeeded)
            #expect(status(result, "global-signout") == .succeeded)
            let error = await #expect(throws: ProviderError.self) { _ = try await other.refresh() }
            #expect(error?.requiresSignIn == true)
        }
    }

    @Test("a global sign-out after expiry takes each lease once and opens each credential once")
    func storeOperationsPerSignOut() async throws {
        let clock = TestClock()
        let counting = CountingStorage(InMemoryCredentialStorage())
        let store = CredentialStore(storage: counting, logger: TraceLog.logger("store"), clock: clock)
        try await withDevices(clock: clock, storeA: store) { devices in
            _ = try await devices.signIn(devices.a)
            _ = try await devices.signIn(devices.a, "bob")
            _ = try await devices.provider.metadata()
            clock.advance(600)
            counting.reset()
            let result = await devices.a.signOut(.all, options: .global)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(result.steps.filter { $0.kind == .refresh && $0.status == .succeeded }.count == 2)
            let counts = counting.counts
            #expect(counts.leases == 2, "\(counts)")
            #expect(counts.opens == 2, "\(counts)")
            // Per account: the refresh's answer (stored before anything else can fail), its new
            // ID token once verified, and the removal.
            #expect(counts.writes == 6, "\(counts)")
        }
    }

    @Test("6. another device is invalidated by a global sign-out: its next call and its refresh fail")
    func otherDeviceInvalidated() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            #expect(try await other.userInfo()["sub"] == .string("alice"))
            _ = await devices.a.signOut(.current, options: .global)
            let call = await #expect(throws: ProviderError.self) { _ = try await other.userInfo() }
            #expect(call?.requiresSignIn == true)
            #expect(try await devices.b.all().count == 1)  // nothing deleted behind the user's back
        }
    }

    @Test("7. a local sign-out leaves the other device signed in")
    func otherDeviceUnaffected() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            let other = try await devices.signIn(devices.b)
            let result = await devices.a.signOut(.current, options: .local)
            #expect(result.signedOutLocally)
            #expect(try await other.userInfo()["sub"] == .string("alice"))
            #expect(try await other.refresh().accessToken != nil)
        }
    }

    // MARK: Accounts

    @Test("signing out the default account sets the default to nil and leaves the others untouched")
    func accounts() async throws {
        try await withDevices { devices in
            let alice = try await devices.signIn(devices.a)
            let bob = try await devices.signIn(devices.a, "bob")
            let bobToken = try await bob.token
            var events = devices.a.changes.makeAsyncIterator()
            let result = await devices.a.signOut(.current)
            #expect(result.signedOutLocally)
            #expect(try await devices.a.default == nil)
            #expect(try await devices.a.all().map(\.id) == [bob.id])
            #expect(try await bob.token == bobToken)
            #expect(try await devices.isActive(bobToken.accessToken))
            #expect(await events.next() == .removed(alice.id))
            #expect(await events.next() == .defaultChanged(nil))
        }
    }

    @Test("signing out every account revokes everything, in parallel")
    func allAccounts() async throws {
        try await withDevices { devices in
            var tokens: [Token] = []
            for user in ["alice", "bob", "alice"] { tokens.append(try await devices.signIn(devices.a, user).token) }
            // Slow revocations overlap when they are sent at once, however loaded the machine is.
            devices.dev.faults.set(.latency(milliseconds: 1_000), for: .revocation)
            let result = await devices.a.signOut(.all)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(try await devices.a.all().isEmpty)
            #expect(result.steps.filter { $0.kind == .localRemoval }.count == 3)
            #expect(devices.dev.faults.count(.revocation) == 9)
            // Three accounts of three tokens each: more than three at once means the accounts
            // too are signed out in parallel, not one after the other.
            #expect(devices.dev.faults.peakConcurrency(.revocation) > 3)
            for token in tokens { #expect(try await devices.isActive(token.refreshToken) == false) }
        }
    }

    @Test("hooks run as named steps after the server steps and before local removal")
    func hooks() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            struct PushFailure: Error {}
            let options = SignOutOptions(hooks: [
                SignOutHook("deregister-push") { credential in #expect(credential.metadata.preferredUsername == "alice")
                },
                SignOutHook("analytics") { _ in throw PushFailure() },
            ])
            let result = await devices.a.signOut(.current, options: options)
            guard case .partial = result else {
                Issue.record("expected partial, got \(result)")
                return
            }
            let names = result.steps.map(\.kind.description)
            #expect(names.suffix(3) == ["hook:deregister-push", "hook:analytics", "local-removal"])
            #expect(status(result, "hook:deregister-push") == .succeeded)
            #expect(status(result, "hook:analytics") == .failed)
        }
    }

    @Test("ending the provider session with the ID token hint ends that session")
    func endSession() async throws {
        try await withDevices { devices in
            _ = try await devices.signIn(devices.a)
            var options = SignOutOptions.local
            options.endProviderSession = true
            options.revokeTokens = false
            let token = try await devices.a.default?.token
            let result = await devices.a.signOut(.current, options: options)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(status(result, "end-session") == .succeeded)
            // The provider revokes the tokens of an ended session.
            #expect(try await devices.isActive(token?.accessToken) == false)
        }
    }

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
            #expect(try await store.outboxEntries().count == 2)
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
        private let all = Mutex<[DrainReport]>([])
        func add(_ report: DrainReport) { all.withLock { $0.append(report) } }
        var count: Int { all.withLock { $0.count } }
        var last: DrainReport? { all.withLock { $0.last } }
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
