import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// A rotated refresh token is never lost and never sent twice; reads and writes of a credential
/// never undo each other; "unknown" is never reported as "unsupported". Against the development
/// provider, which rotates refresh tokens and ends the grant when an old one comes back.
@Suite("Refresh and revocation that never lose a token")
struct RefreshSafetyTests {
    func signIn(_ harness: Harness, _ user: String = "alice") async throws -> Credential {
        try await harness.provider.signIn(.password(username: user, password: "\(user)-password"), into: harness.store)
    }

    /// A provider object of its own, with nothing fetched yet: what a new process starts with.
    func freshProvider(_ harness: Harness) -> OpenIDProvider {
        OpenIDProvider(
            configuration: harness.provider.configuration, transport: transport, logger: TraceLog.logger("provider"))
    }

    /// The provider's documents uncacheable (`max-age=0`): the store keeps none, and a new
    /// process must fetch them, as one does when they expired.
    static var documentsNotKept: DevProviderConfiguration {
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 0
        return configuration
    }

    @Test("an unreachable JWKS fails the refresh before the refresh token is spent")
    func jwksBeforeRefresh() async throws {
        try await withHarness(.dev, devConfiguration: Self.documentsNotKept) { harness in
            let dev = try #require(harness.dev)
            let signedIn = try await signIn(harness)
            let before = try await signedIn.token
            let credential = await harness.store.credential(signedIn.id, provider: freshProvider(harness))
            dev.faults.resetCounters()
            dev.faults.set(.status(503, retryAfter: 1), for: .jwks)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.isRetryable == true)
            #expect(dev.faults.count("token.refresh_token") == 0, "the refresh token must not be spent")
            #expect(try await credential.token == before)
            dev.faults.clear()
            let after = try await credential.refresh()
            #expect(after.refreshToken != before.refreshToken)
            #expect(try await harness.isActive(after.accessToken))
        }
    }

    @Test(
        "an unreadable refresh answer says the provider may have rotated; the next refresh tries the stored token once",
        arguments: [
            DevProviderFault(malformedBody: true, remaining: 1), .init(oversizedBodyBytes: 2 << 20, remaining: 1),
        ])
    func unreadableAnswer(_ fault: DevProviderFault) async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            // The provider rotates, then its answer is lost: the stored refresh token is spent.
            dev.faults.set(fault, for: .token)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(
                error?.description.contains("may have rotated the refresh token") == true,
                "\(error.map { "\($0)" } ?? "")")
            #expect(try await credential.stored().state.needsSignIn == false, "not signed out on a guess")
            dev.faults.resetCounters()
            let next = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(next?.code == .signInRequired)
            #expect(dev.faults.count("token.refresh_token") == 1, "the stored refresh token was tried once")
            #expect(try await credential.stored().state.needsSignIn)
        }
    }

    @Test(
        "a refresh answer with an odd optional field is stored: the rotated refresh token is not lost",
        arguments: [
            ["scope": #"["openid","profile","offline_access"]"#], ["expires_in": #""3600s""#], ["expires_in": "-1"],
            ["id_token": "42"],
        ])
    func oddRefreshAnswer(_ fields: [String: String]) async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            let before = try await credential.token
            dev.faults.set(DevProviderFault(replacedFields: fields, remaining: 1), for: .token)
            let after = try await credential.refresh()
            #expect(after.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            #expect(after.idToken == before.idToken || fields["id_token"] == nil)
            #expect(try await harness.isActive(after.accessToken))
            let next = try await credential.refresh()
            #expect(next.refreshToken != after.refreshToken, "the grant is alive")
        }
    }

    @Test("a refreshed ID token that cannot be verified leaves the new access and refresh tokens stored")
    func rejectedIDTokenKeepsRotation() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            let before = try await credential.token
            // The new ID token is signed with a key the client has not seen, and the JWKS cannot
            // be fetched again: verification fails after the token endpoint has answered.
            try await dev.rotateKeys()
            dev.faults.set(.status(503, retryAfter: 1), for: .jwks)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.code == .idTokenRejected)
            #expect(error?.description.contains("kept") == true)
            let after = try await credential.token
            #expect(after.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            #expect(after.idToken == before.idToken, "the unverified ID token was not")
            #expect(try await harness.isActive(after.accessToken))
            // accessToken() hands out the stored, valid access token without another refresh.
            #expect(try await credential.accessToken() == after.accessToken)
            dev.faults.clear()
            let again = try await credential.refresh()
            #expect(again.idToken != before.idToken, "a verified ID token replaces the old one")
            #expect(try await harness.isActive(again.accessToken))
        }
    }

    @Test("invalid_grant after another program rotated the refresh token: the stored one is used, no sign-in")
    func invalidGrantReadsAgain() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.revokesGrantOnRefreshReplay = false
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let dev = try #require(harness.dev)
            let signedIn = try await signIn(harness)
            let store = harness.store
            let id = signedIn.id
            let once = NIOLockedValueBox(true)
            // Just before the request goes out, a program that does not take the refresh lease
            // refreshes the same credential and stores its answer.
            let racing = ForwardingProvider(harness.provider) { token throws(ProviderError) in
                guard
                    once.withLockedValue({ first in
                        defer { first = false }
                        return first
                    })
                else { return }
                let rotated = try await harness.provider.refresh(token)
                // Written straight to the storage, by compare-and-swap, as a writer that takes no
                // lease would.
                do {
                    var stored = try #require(try await store.storage.credential(for: id))
                    stored.replaceToken(with: rotated)
                    try await store.storage.update(stored)
                } catch {
                    throw ProviderError(.storage, reason: "test setup: \(error)")
                }
            }
            let credential = await store.credential(id, provider: racing)
            dev.faults.resetCounters()
            let refreshed = try await credential.refresh()
            #expect(dev.faults.count("token.refresh_token") == 3, "the other's, the refused one, the retry")
            #expect(try await harness.isActive(refreshed.accessToken))
            #expect(try await credential.stored().state.needsSignIn == false)
        }
    }

    @Test("a refresh that lands while a revocation is in flight keeps its fresh tokens")
    func refreshDuringRevocation() async throws {
        let clock = TestClock()
        try await withHarness(.dev, clock: clock) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            clock.advance(600)
            dev.faults.resetCounters()
            dev.faults.set(.latency(milliseconds: 300), for: .revocation)
            async let revoked = credential.revoke(.accessToken)
            while dev.faults.count(.revocation) == 0 { try await Task.sleep(for: .milliseconds(5)) }
            let fresh = try await credential.accessToken()
            #expect(await revoked.succeeded)
            let stored = try await credential.token
            #expect(stored.accessToken == fresh, "the fresh access token was kept")
            #expect(try await harness.isActive(fresh))
        }
    }

    @Test("a global sign-out of an expired credential shares the one refresh with concurrent callers")
    func globalSignOutSharesRefresh() async throws {
        let clock = TestClock()
        try await withHarness(.dev, clock: clock) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            clock.advance(600)
            dev.faults.resetCounters()
            // A slow token endpoint, so that the sign-out's refresh and the callers' overlap.
            dev.faults.set(.latency(milliseconds: 200), for: .token)
            async let result = harness.store.signOut(.current, options: .global)
            await withTaskGroup { group in
                for _ in 0..<5 { group.addTask { _ = try? await credential.accessToken() } }
            }
            let outcome = await result
            guard case .complete = outcome else {
                Issue.record("expected complete, got \(outcome): \(outcome.steps) \(dev.faults.counters)")
                return
            }
            #expect(dev.faults.count("token.refresh_token") == 1)
            #expect(dev.faults.count(.globalSignOut) == 1)
        }
    }

    @Test("offline, a global sign-out reports the global step failed, not unsupported, and queues the revocations")
    func offlineGlobalSignOut() async throws {
        try await withHarness(.dev, devConfiguration: Self.documentsNotKept) { harness in
            let dev = try #require(harness.dev)
            let credential = try await signIn(harness)
            let token = try await credential.token
            let fresh = freshProvider(harness)
            await harness.store.register(fresh)
            dev.faults.isOffline = true
            let result = await harness.store.signOut(.current, options: .global)
            guard case .partial(let steps) = result else {
                Issue.record("expected partial, got \(result)")
                return
            }
            // Whether the provider has a global sign-out is unknown offline: the step is queued,
            // and the drain finds out.
            let global = try #require(steps.first { $0.kind == .globalSignOut })
            #expect(global.status == .queued)
            #expect(global.isRetryable)
            #expect(global.reason?.code == .supportUnknown)
            #expect(steps.first { $0.kind == .revoke(.refreshToken) }?.status == .queued)
            #expect(try await harness.store.all().isEmpty)
            dev.faults.isOffline = false
            let drained = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(drained.failed == 0)
            #expect(try await harness.isActive(token.refreshToken) == false)
        }
    }

    @Test("a provider that revokes access tokens only with the refresh token: revoke(.all) and sign-out agree")
    func refreshOnlyRevocation() async throws {
        try await withHarness(.dev) { harness in
            let signedIn = try await signIn(harness)
            let token = try await signedIn.token
            let limited = ForwardingProvider(harness.provider, revocableKinds: [.refreshToken, .deviceSecret])
            let credential = await harness.store.credential(signedIn.id, provider: limited)
            let result = await credential.revoke(.all)
            guard case .endsWithRefreshToken? = result.outcomes[.accessToken] else {
                Issue.record("access token: \(String(describing: result.outcomes[.accessToken]))")
                return
            }
            #expect(result.succeeded)
            #expect(result.removedFromStore)
            #expect(try await harness.isActive(token.accessToken) == false)
            // Alone, it cannot be revoked: that is a failure, not a success.
            let bob = try await harness.store.credential(signIn(harness, "bob").id, provider: limited)
            let alone = await bob.revoke(.accessToken)
            #expect(alone.succeeded == false)
            #expect(alone.failures[.accessToken]?.code == .unsupported)
        }
    }

    @Test(
        "a store, its provider and a credential's handle are released when their callers let go, after ID tokens were verified and the credential refreshed"
    )
    func storeReleased() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        weak var releasedStore: CredentialStore?
        weak var releasedHandle: Credential?
        weak var releasedProvider: OpenIDProvider?
        do {
            let store = CredentialStore.inMemory()
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
                transport: transport)
            let credential = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: store)
            _ = try await credential.accessToken()
            // The ID tokens verified against the provider's key set, which it fetched and keeps.
            _ = try await credential.refresh()
            _ = try await credential.userInfo()
            releasedStore = store
            releasedHandle = credential
            releasedProvider = provider
        }
        #expect(releasedHandle == nil)
        #expect(releasedStore == nil)
        #expect(releasedProvider == nil, "the provider outlived its last user")
    }

    @Test("endpoints the OpenID configuration lacks come from the RFC 8414 metadata")
    func mergedMetadata() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.omittedFromOpenIDConfiguration = ["revocation_endpoint", "introspection_endpoint"]
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let dev = try #require(harness.dev)
            let alice = try await signIn(harness)
            let token = try await alice.token
            #expect(try await harness.provider.endpoint(.revocation) == dev.url(.revocation))
            #expect(try await harness.isActive(token.accessToken), "introspection found through RFC 8414 too")
            #expect(await alice.revoke(.all).succeeded)
            #expect(try await harness.isActive(token.refreshToken) == false)
            // A sign-out is complete, and one queued while offline drains through a new client.
            _ = try await signIn(harness, "bob")
            #expect(await harness.store.signOut(.current).failures.isEmpty)
            let carol = try await signIn(harness, "alice")
            let queuedToken = try await carol.token
            dev.faults.isOffline = true
            guard case .partial = await harness.store.signOut(.account(carol.id)) else {
                Issue.record("expected a queued revocation")
                return
            }
            dev.faults.isOffline = false
            await harness.store.register(freshProvider(harness))
            let drained = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(drained.failed == 0)
            #expect(drained.revoked >= 1)
            #expect(try await harness.isActive(queuedToken.refreshToken) == false)
        }
    }

    @Test("without an ID token, the account's name comes from userinfo")
    func accountFromUserInfo() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.passwordGrantIssuesIDToken = false
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let credential = try await signIn(harness)
            let stored = try await credential.stored()
            #expect(stored.token.idToken == nil)
            #expect(stored.metadata.preferredUsername == "alice")
            #expect(stored.metadata.email == "alice@example.com")
            #expect(stored.metadata.subject == "alice")
            #expect(try await harness.store.find(.username("alice")).map(\.id) == [credential.id])
            // A refresh without an ID token keeps the name.
            try await credential.refresh()
            #expect(try await credential.stored().metadata.preferredUsername == "alice")
        }
    }

    @Test("sign-out errors say what they are, and whether trying again can help")
    func signOutErrorCodes() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            guard case .failed(let none, _) = await harness.store.signOut(.current) else {
                Issue.record("an empty store has no account to sign out")
                return
            }
            #expect(none.code == .noSuchAccount)
            #expect(none.isRetryable == false)
            _ = try await signIn(harness)
            let store = harness.store
            let cancelled = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await store.signOut(.current)
            }.value
            guard case .failed(let cancellation, _) = cancelled else {
                Issue.record("expected failed, got \(cancelled)")
                return
            }
            #expect(cancellation.code == .cancelled)
            #expect(try await store.all().count == 1)
            dev.faults.set(.status(503, retryAfter: 1), for: .revocation)
            guard
                case .failed(let serverFailure, _) = await store.signOut(
                    .current, options: SignOutOptions(policy: .serverFirst))
            else {
                Issue.record("expected failed")
                return
            }
            #expect(serverFailure.code == .serverStepFailed)
            #expect(serverFailure.isRetryable)
            #expect(try await store.all().count == 1)
        }
    }
}
