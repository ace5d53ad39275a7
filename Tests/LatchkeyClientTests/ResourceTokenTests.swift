import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// Access tokens for single resources (RFC 8707) with the account's one refresh token.
@Suite("Resource tokens")
struct ResourceTokenTests {
    static let files = URL(string: "https://files.latchkey.test/")!
    static let mail = URL(string: "https://mail.latchkey.test/")!

    @Test("a resource's token has that audience and the scopes asked for; the account's own token stays")
    func audienceAndScopes() async throws {
        try await withHarness(.dev) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let own = try await alice.accessToken()
            let files = try await alice.accessToken(for: Self.files)
            let mail = try await alice.resourceToken(for: Self.mail, scopes: ["openid", "email"])
            let filesFields = try await harness.inspector.introspect(files, kind: .accessToken).fields
            let mailFields = try await harness.inspector.introspect(mail.accessToken, kind: .accessToken).fields
            #expect(filesFields["aud"] == .string(Self.files.absoluteString))
            #expect(mailFields["aud"] == .string(Self.mail.absoluteString))
            #expect(mailFields["scope"] == .string("openid email"))
            #expect(mail.scopes == ["openid", "email"])
            #expect(try await alice.accessToken() == own)
            // The grant keeps its scopes: the account's next refresh has all of them.
            #expect(try await alice.refresh().scopes?.contains("profile") == true)
            #expect(try await alice.accessToken(for: Self.files) == files)
            #expect("\(try await alice.token)".contains(files) == false)
        }
    }

    @Test(
        "a sign-in for one resource with no refresh token: its access token serves that resource, with no request, and is revoked once at sign-out"
    )
    func signedInForOneResourceWithoutRefreshToken() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            // No offline_access: the development provider gives no refresh token.
            let alice = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), scopes: ["openid", "profile"],
                resources: [Self.files], into: harness.store)
            #expect(try await alice.token.refreshToken == nil)
            dev.faults.resetCounters()
            let own = try #require(try await alice.token.accessToken)
            #expect(try await alice.accessToken(for: Self.files) == own)
            #expect(dev.faults.count("token.refresh_token") == 0, "the sign-in's token is the resource's")
            let fields = try await harness.inspector.introspect(own, kind: .accessToken).fields
            #expect(fields["aud"] == .string(Self.files.absoluteString), "the provider honoured the resource")
            // Another resource needs a refresh token: the account must sign in again for it.
            let other = await #expect(throws: ProviderError.self) { try await alice.accessToken(for: Self.mail) }
            #expect(other?.requiresSignIn == true, "\(String(describing: other))")

            let signOut = await harness.store.signOut(.account(alice.id))
            #expect(signOut.failures.isEmpty, "\(signOut)")
            #expect(dev.faults.count(.revocation) == 1, "the access token once, though it is the resource's too")
            #expect(try await harness.isActive(own) == false)
        }
    }

    @Test("twenty callers at once: one request for the resource's token")
    func singleFlight() async throws {
        try await withHarness(.dev) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let dev = try #require(harness.dev)
            dev.faults.resetCounters()
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await alice.accessToken(for: Self.files) } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens.count == 1)
            #expect(dev.faults.count("token.refresh_token") == 1)
        }
    }

    @Test("a short-lived resource token is kept for half its life, as the account's own is: 700 calls, one refresh")
    func shortLivedIsKept() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.accessTokenLifetime = 10
        let clock = TestClock()
        try await withHarness(.dev, devConfiguration: configuration, clock: clock) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let dev = try #require(harness.dev)
            dev.faults.resetCounters()
            var tokens: Set<String> = []
            for _ in 0..<700 {
                tokens.insert(try await alice.accessToken(for: Self.files))
                clock.advance(0.006)  // 4.2 s in all: within half the token's 10 s
            }
            #expect(tokens.count == 1)
            #expect(dev.faults.count("token.refresh_token") == 1)
            clock.advance(1)  // past half its life: a new one
            #expect(try await alice.accessToken(for: Self.files) != tokens.first)
            #expect(dev.faults.count("token.refresh_token") == 2)
        }
    }

    @Test("a resource that is not an absolute URI without a fragment is refused before anything is sent")
    func invalidResource() async throws {
        try await withHarness(.dev) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let dev = try #require(harness.dev)
            dev.faults.resetCounters()
            for text in ["https://files.latchkey.test/#part", "files", "/relative/path"] {
                let resource = try #require(URL(string: text))
                let error = await #expect(throws: ProviderError.self) { try await alice.accessToken(for: resource) }
                #expect(error?.code == .invalidArgument, "\(text)")
            }
            #expect(dev.faults.count("token.refresh_token") == 0)
        }
    }

    @Test("a sign-out, and a revocation of the access token, leave no resource's token active")
    func revokedWithTheAccount() async throws {
        try await withHarness(.dev) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let files = try await alice.accessToken(for: Self.files)
            let result = await alice.revoke(.accessToken)
            #expect(result.outcomes[.accessToken]?.isRevoked == true)
            #expect(try await harness.isActive(files) == false)

            let bob = try await DPoPTests.signIn(harness, "bob")
            let own = try await bob.accessToken()
            let mail = try await bob.accessToken(for: Self.mail)
            let signOut = await harness.store.signOut(.account(bob.id))
            #expect(signOut.failures.isEmpty, "\(signOut)")
            #expect(try await harness.isActive(own) == false)
            #expect(try await harness.isActive(mail) == false)
        }
    }

    @Test("a sign-out while revocation fails queues each resource's token beside the account's own")
    func queued() async throws {
        try await withHarness(.dev) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let files = try await alice.accessToken(for: Self.files)
            let mail = try await alice.accessToken(for: Self.mail)
            let dev = try #require(harness.dev)
            dev.faults.set(.status(503), for: .revocation)
            let result = await harness.store.signOut(.account(alice.id))
            #expect(result.signedOutLocally, "\(result)")
            let queued = try await harness.store.outboxEntries().filter { $0.action == .revoke(.accessToken) }
            #expect(queued.count == 3)
            dev.faults.clear(.revocation)
            let report = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(report.failed == 0, "\(report)")
            #expect(report.revoked >= 3, "\(report)")
            for token in [files, mail] { #expect(try await harness.isActive(token) == false) }
        }
    }

    @Test("with DPoP, a resource's token is bound to the account's key too")
    func bound() async throws {
        try await withHarness(.dev, tweak: DPoPTests.bound) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let files = try await alice.resourceToken(for: Self.files)
            #expect(files.tokenType == "DPoP")
            let fields = try await harness.inspector.introspect(files.accessToken, kind: .accessToken).fields
            #expect(fields["cnf"] == .object(["jkt": .string(try #require(try await alice.token.dpop?.thumbprint))]))
        }
    }
}
