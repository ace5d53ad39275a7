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

/// Sign-out against the development provider: the Cognito walkthrough's seven tests, the
/// accounts rules, the policies and the revocation outbox.
@Suite("Sign-out")
struct SignOutTests: SignOutDevicesTest {
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
            for user in ["alice", "bob"] { tokens.append(try await devices.signIn(devices.a, user).token) }
            // Slow revocations overlap when they are sent at once, however loaded the machine is
            // (under the thread sanitizer, with the whole suite beside it, a second was not enough).
            devices.dev.faults.set(.latency(milliseconds: TestTiming.scaled(milliseconds: 1_000)), for: .revocation)
            let result = await devices.a.signOut(.all)
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
            #expect(try await devices.a.all().isEmpty)
            #expect(result.steps.filter { $0.kind == .localRemoval }.count == 2)
            #expect(devices.dev.faults.count(.revocation) == 6)
            // Two accounts of three tokens each: more than three at once means the accounts
            // too are signed out in parallel, not one after the other.
            #expect(devices.dev.faults.peakConcurrency(.revocation) > 3)
            for token in tokens { #expect(try await devices.isActive(token.refreshToken) == false) }
        }
    }

    @Test("hooks run as named steps once the account has left the device, after its lease, each under its deadline")
    func hooks() async throws {
        try await withDevices { devices in
            let credential = try await devices.signIn(devices.a)
            struct PushFailure: Error {}
            let store = devices.a
            let options = SignOutOptions(hooks: [
                SignOutHook("deregister-push") { signedOut in
                    #expect(signedOut.metadata.preferredUsername == "alice")
                    // Outside the lease: the store is free, and the account is gone from it.
                    let stillStored = try await store.credential(for: credential.id)
                    #expect(stillStored == nil)
                },
                SignOutHook("analytics") { _ in throw PushFailure() },
                SignOutHook("stuck", timeout: .milliseconds(200)) { _ in try await Task.sleep(for: .seconds(3_600)) },
            ])
            let result = await devices.a.signOut(.current, options: options)
            guard case .partial = result else {
                Issue.record("expected partial, got \(result)")
                return
            }
            let names = result.steps.map(\.kind.description)
            #expect(names.suffix(4) == ["local-removal", "hook:deregister-push", "hook:analytics", "hook:stuck"])
            #expect(status(result, "hook:deregister-push") == .succeeded)
            #expect(status(result, "hook:analytics") == .failed)
            let stuck = try #require(result.steps.first { $0.kind == .hook("stuck") })
            #expect(stuck.status == .failed)
            #expect(stuck.error is SignOutHookTimedOut)
            #expect(stuck.isRetryable)
        }
    }

    @Test("signing out several accounts reports each: which are signed out, which are not, and why")
    func perAccount() async throws {
        try await withDevices { devices in
            let alice = try await devices.signIn(devices.a, "alice")
            // Bob's tokens came from a provider this store does not know: no server step can be sent.
            let elsewhere = ProviderIdentity(issuer: "https://unregistered.example", clientID: "other-cli")
            let bob = try await devices.a.add(
                Token(
                    accessToken: "bob-access", refreshToken: "bob-refresh", issuedAt: Date(),
                    expiresAt: Date().addingTimeInterval(3_600), provider: elsewhere))
            let options = SignOutOptions(
                policy: .serverFirst, hooks: [SignOutHook("deregister") { _ in }])
            let result = await devices.a.signOut(.all, options: options)
            guard case .failed(let error, _) = result else {
                Issue.record("expected failed, got \(result)")
                return
            }
            #expect(error.code == .someAccountsStillSignedIn)
            #expect(error.description.contains("1 of 2"), "\(error)")
            #expect(error.accountFailures.map(\.account) == [bob.id])
            let outcomes = Dictionary(uniqueKeysWithValues: result.accounts.map { ($0.account, $0) })
            #expect(outcomes[alice.id]?.signedOutLocally == true)
            #expect(outcomes[bob.id]?.signedOutLocally == false)
            #expect(try await devices.a.all().map(\.id) == [bob.id])
            // Why Bob is still signed in, and his hook not run while he is.
            let bobSteps = result.steps.filter { $0.account == bob.id }
            #expect(bobSteps.first { $0.kind == .revoke(.refreshToken) }?.reason?.code == .noProvider)
            #expect(bobSteps.first { $0.kind == .hook("deregister") }?.reason?.code == .stillSignedIn)
            #expect(
                result.steps.first { $0.account == alice.id && $0.kind == .hook("deregister") }?.status == .succeeded)
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
}
