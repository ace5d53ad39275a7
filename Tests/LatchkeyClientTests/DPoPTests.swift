import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeySQLite
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// Tokens bound to the account's own key (DPoP, RFC 9449), against the development provider,
/// whose checks of a proof share no code with the client's proofs.
@Suite("DPoP")
struct DPoPTests {
    static func signIn(_ harness: Harness, _ username: String = "alice") async throws -> Credential {
        try await harness.provider.signIn(
            .password(username: username, password: "\(username)-password"), into: harness.store)
    }

    static func bound(_ configuration: inout OpenIDProviderConfiguration) { configuration.dpop = .required }

    @Test("a sign-in binds the tokens to a key of the account's own, and every request proves it")
    func binds() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let alice = try await Self.signIn(harness)
            let bob = try await Self.signIn(harness, "bob")
            let token = try await alice.token
            #expect(token.tokenType == "DPoP")
            let binding = try #require(token.dpop)
            #expect(binding.isKeyAvailable)
            #expect(try await bob.token.dpop?.thumbprint != binding.thumbprint)
            // The provider bound the access and refresh tokens to that key.
            let access = try await harness.inspector.introspect(try #require(token.accessToken), kind: .accessToken)
            let refresh = try await harness.inspector.introspect(try #require(token.refreshToken), kind: .refreshToken)
            #expect(access.fields["token_type"] == .string("DPoP"))
            #expect(access.fields["cnf"] == .object(["jkt": .string(binding.thumbprint)]))
            #expect(refresh.fields["cnf"] == .object(["jkt": .string(binding.thumbprint)]))

            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
            let dev = try #require(harness.dev)
            let request = HTTPRequest(method: .get, url: dev.url(.userinfo))
            let authorized = try await alice.authorized(request)
            let accessToken = try await alice.accessToken()
            #expect(authorized.headerFields[.authorization] == "DPoP \(accessToken)")
            #expect(authorized.headerFields[HTTPField.Name("DPoP")!] != nil)
            #expect(try await alice.send(request, through: transport).response.status == .ok)
            // A refresh proves the key too, and keeps the binding.
            let refreshed = try await alice.refresh()
            #expect(refreshed.dpop == binding)
            #expect(refreshed.tokenType == "DPoP")
            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
            #expect(dev.faults.count("dpop.refused") == 0)
        }
    }

    @Test("a stolen access token is refused without the key, and a stolen refresh token cannot refresh")
    func stolenTokens() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let alice = try await Self.signIn(harness)
            let token = try await alice.token
            let accessToken = try #require(token.accessToken)
            // As a bearer token.
            await #expect(throws: ProviderError.self) { try await harness.provider.userInfo(accessToken: accessToken) }
            // With a proof of another key: the thief's own sign-in.
            let thief = try await Self.signIn(harness, "bob")
            var stolen = try await thief.token
            stolen.accessToken = accessToken
            let refused = await #expect(throws: ProviderError.self) {
                try await harness.provider.userInfo(for: stolen)
            }
            #expect(refused?.status == 401)
            // The refresh token, with the thief's key: refused, and not spent.
            stolen.refreshToken = token.refreshToken
            let refusal = await #expect(throws: ProviderError.self) {
                try await harness.provider.exchangeRefreshToken(of: stolen)
            }
            #expect(refusal?.oauthError == .invalidDPoPProof)
            stolen.dpop = nil
            await #expect(throws: ProviderError.self) { try await harness.provider.exchangeRefreshToken(of: stolen) }
            try await alice.refresh()
            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
        }
    }

    @Test("a nonce challenge is answered with the newest nonce, three times at most, never in a loop")
    func nonces() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let dev = try #require(harness.dev)
            await dev.requireDPoPNonces(rotatingAfter: 1)
            // The first proof has no nonce: challenged once, then accepted.
            let alice = try await Self.signIn(harness)
            #expect(dev.faults.count("dpop.refused") == 1)
            // Nonces given beside answers are kept: a nonce that rotates on every use costs no
            // challenge.
            for _ in 0..<3 { _ = try await alice.userInfo() }
            try await alice.refresh()
            #expect(dev.faults.count("dpop.refused") == 1)
            // A nonce gone stale under a request: one more try with the new one.
            await dev.forceDPoPNonceChallenges(1)
            _ = try await alice.userInfo()
            #expect(dev.faults.count("dpop.refused") == 2)
            // Three in a row are answered; a fourth is the answer, not a loop.
            await dev.forceDPoPNonceChallenges(3)
            _ = try await alice.userInfo()
            #expect(dev.faults.count("dpop.refused") == 5)
            await dev.forceDPoPNonceChallenges(4)
            let error = await #expect(throws: ProviderError.self) { try await alice.userInfo() }
            #expect(error?.oauthError == .useDPoPNonce)
            #expect(dev.faults.count("dpop.refused") == 9)
            await dev.forceDPoPNonceChallenges(4)
            let tokenError = await #expect(throws: ProviderError.self) { try await alice.refresh() }
            #expect(tokenError?.oauthError == .useDPoPNonce)
            #expect(dev.faults.count("dpop.refused") == 13)
            // The refresh token was not spent: the next refresh goes through.
            try await alice.refresh()
        }
    }

    @Test(
        "nonce retries take turns per server, not under the credential's refresh lease: a request goes through while the lease is held"
    )
    func nonceTurnsApartFromTheLease() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let dev = try #require(harness.dev)
            await dev.requireDPoPNonces(rotatingAfter: 1)
            let alice = try await Self.signIn(harness)
            // Another task holds the credential's lease (a slow refresh, say) until the request
            // is answered, or for ten seconds.
            let answered = NIOLockedValueBox(false)
            let held = NIOLockedValueBox(false)
            let holder = Task {
                try await harness.store.storage.withCredentialLease(
                    for: alice.id, terms: LeaseTerms(duration: .seconds(30))
                ) { _ in
                    held.withLockedValue { $0 = true }
                    for _ in 0..<500 where !answered.withLockedValue({ $0 }) {
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                    return answered.withLockedValue { $0 }
                }
            }
            while !held.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            // A nonce the server says is stale: the retry runs in the server's turn.
            await dev.forceDPoPNonceChallenges(1)
            _ = try await alice.userInfo()
            answered.withLockedValue { $0 = true }
            #expect(try await holder.value, "the request was answered while the refresh lease was held")
            #expect(dev.faults.count("dpop.refused") == 2)
        }
    }

    @Test("a global sign-out of a bound account carries a proof, also from the outbox after a refresh")
    func globalSignOut() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let dev = try #require(harness.dev)
            _ = try await Self.signIn(harness)
            let now = await harness.store.signOut(.current, options: .global)
            #expect(now.failures.isEmpty, "\(now)")
            #expect(await dev.liveGrants(of: "alice") == 0)

            // Queued while the provider is away, then sent after the access token died: the
            // refresh the outbox makes needs the key, sealed into the entry with the tokens.
            let alice = try await Self.signIn(harness)
            let accessToken = try #require(try await alice.token.accessToken)
            dev.faults.set(.status(503), for: .globalSignOut)
            let queued = await harness.store.signOut(.current, options: .global)
            #expect(queued.signedOutLocally, "\(queued)")
            #expect(!queued.failures.isEmpty)
            dev.faults.clear(.globalSignOut)
            try await harness.provider.revoke(accessToken, kind: .accessToken)
            let report = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            let left = try await harness.store.outboxEntries().map { "\($0.action): \($0.lastError ?? "-")" }
            #expect(report.failed == 0 && report.permanent == 0, "\(report) \(left)")
            #expect(await dev.liveGrants(of: "alice") == 0)
            #expect(dev.faults.count("dpop.refused") == 0)
        }
    }

    @Test("a nonce one process learned is where the next process starts: it meets no challenge")
    func sharedNonces() async throws {
        try await withHarness(.dev, tweak: Self.bound) { harness in
            let dev = try #require(harness.dev)
            await dev.requireDPoPNonces(rotatingAfter: 100)
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let path = folder.file("credentials.sqlite")
            let first = try await CredentialStore.sqlite(at: path)
            let alice = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: first)
            #expect(dev.faults.count("dpop.refused") == 1)
            // Another process: its own store handle and provider, nothing in memory.
            let second = try await CredentialStore.sqlite(at: path)
            let provider = OpenIDProvider(configuration: harness.provider.configuration, transport: transport)
            let again = await provider.credential(alice.id, in: second)
            #expect(try await again.userInfo()["preferred_username"] == .string("alice"))
            try await again.refresh()
            #expect(dev.faults.count("dpop.refused") == 1)
        }
    }

    @Test(
        "one account's key destroyed: that account must sign in again, and the other keeps working",
        arguments: ProviderKind.enabled)
    func lostKey(_ kind: ProviderKind) async throws {
        try await withHarness(kind, tweak: Self.bound) { harness in
            let alice = try await Self.signIn(harness)
            let bob = try await Self.signIn(harness, "bob")
            // Alice's key goes missing from her sealed record (a store written by a build that
            // lost it, say); nothing else changes.
            var stored = try #require(try await harness.store.storage.credential(for: alice.id))
            var json = try #require(
                try JSONSerialization.jsonObject(with: JSONEncoder().encode(stored.token)) as? [String: Any])
            json["dpop_key"] = nil
            stored.token = try JSONDecoder().decode(Token.self, from: JSONSerialization.data(withJSONObject: json))
            #expect(stored.token.dpop?.isKeyAvailable == false)
            #expect("\(stored.token)".contains("key missing"))
            try await harness.store.storage.update(stored)

            let refresh = await #expect(throws: ProviderError.self) { try await alice.refresh() }
            #expect(refresh?.code == .dpopKeyUnavailable)
            #expect(refresh?.requiresSignIn == true)
            // The grant nothing can use any more was ended at the provider.
            let refreshToken = try #require(stored.token.refreshToken)
            #expect(try await harness.inspector.introspect(refreshToken, kind: .refreshToken).active == false)
            let again = await #expect(throws: ProviderError.self) { try await alice.refresh() }
            #expect(again?.code == .dpopKeyUnavailable)
            let userinfo = try #require(URL(string: "https://resource.latchkey.test/userinfo"))
            let authorize = await #expect(throws: ProviderError.self) {
                try await alice.authorized(HTTPRequest(method: .get, url: userinfo))
            }
            #expect(authorize?.code == .dpopKeyUnavailable)
            #expect(try await alice.stored().state.needsSignIn)
            // Bob's account, and the store, are untouched.
            try await bob.refresh()
            #expect(try await bob.userInfo()["preferred_username"] == .string("bob"))
            #expect(try await harness.store.accounts().count == 2)
        }
    }

    @Test("a sign-out of bound tokens leaves none of them active", arguments: ProviderKind.enabled)
    func signOut(_ kind: ProviderKind) async throws {
        try await withHarness(kind, tweak: Self.bound) { harness in
            let alice = try await Self.signIn(harness)
            let token = try await alice.token
            let result = await harness.store.signOut(.account(alice.id))
            let complete = if case .complete = result { true } else { false }
            #expect(complete, "the sign-out was \(result)")
            #expect(try await harness.isActive(token.accessToken) == false)
            let refresh = try await harness.inspector.introspect(try #require(token.refreshToken), kind: .refreshToken)
            #expect(refresh.active == false)
        }
    }

    @Test("when advertised: a provider that lists ES256 gets proofs; without DPoP, bearer tokens as before")
    func policies() async throws {
        try await withHarness(.dev, tweak: { $0.dpop = .whenAdvertised }) { harness in
            let token = try await Self.signIn(harness).token
            #expect(token.tokenType == "DPoP")
        }
        try await withHarness(.dev) { harness in
            let token = try await Self.signIn(harness).token
            #expect(token.tokenType == "Bearer")
            #expect(token.dpop == nil)
        }
    }
}
