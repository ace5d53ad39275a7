import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// The same account signing in again keeps its place in the store; its old grant ends.
@Suite("Signing in again")
struct SignInAgainTests {
    func signIn(_ harness: Harness, _ user: String, makeDefault: Bool = false) async throws -> Credential {
        try await harness.provider.signIn(
            .password(username: user, password: "\(user)-password"), into: harness.store, makeDefault: makeDefault)
    }

    @Test("the same user again replaces the tokens, keeps id, tags and default, and revokes the old grant")
    func replaces() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let first = try await signIn(harness, "alice")
            try await harness.store.setTags(["team": "blue"], for: first.id)
            let old = try await first.token
            _ = try await signIn(harness, "bob", makeDefault: true)

            let again = try await signIn(harness, "alice")
            #expect(again.id == first.id)
            let accounts = try await harness.store.accounts()
            #expect(accounts.count == 2, "no second alice")
            let stored = try #require(try await harness.store.credential(for: first.id))
            #expect(stored.metadata.tags == ["team": "blue"])
            #expect(stored.token.refreshToken != old.refreshToken)
            #expect(try await harness.store.defaultCredentialID() != first.id, "bob stays the default")
            #expect(await dev.liveGrants(of: "alice") == 1, "the old grant is revoked")
            #expect(try await dev.isActive(#require(old.refreshToken)) == false)
            #expect(try await dev.isActive(#require(stored.token.refreshToken)))
        }
    }

    @Test("the old grant's revocation is queued when the provider cannot take it; the new tokens are stored")
    func queuesWhenOffline() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let first = try await signIn(harness, "alice")
            let old = try await first.token
            dev.faults.set(.status(503, retryAfter: 1), for: .revocation)
            let again = try await signIn(harness, "alice")
            #expect(again.id == first.id)
            #expect(try await again.token.refreshToken != old.refreshToken)
            let entries = try await harness.store.outboxEntries()
            #expect(entries.map(\.action) == [.revoke(.refreshToken)])
            dev.faults.clear()
            let report = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(report.revoked == 1)
            #expect(try await dev.isActive(#require(old.refreshToken)) == false)
            #expect(await dev.liveGrants(of: "alice") == 1)
        }
    }
}
