import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A refresh token the provider rejected is not sent again on its own: every request after it
/// is answered "sign in again" without a token request, until an explicit refresh or a new
/// sign-in. Against the development provider, which ends a grant as an administrator would.
@Suite("A rejected refresh token")
struct RejectedRefreshTokenTests {
    @Test(
        "is not sent again by the requests that follow; an explicit refresh tries it once more; a new sign-in clears it"
    )
    func notSentAgain() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let alice = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            #expect(await dev.endSessions(of: "alice") >= 1, "an administrator ended alice's grant")
            let first = await #expect(throws: ProviderError.self) { _ = try await alice.accessToken(validFor: 86_400) }
            #expect(first?.code == .signInRequired)
            #expect(try await alice.stored().state.needsSignIn)
            dev.faults.resetCounters()
            // Requests that need a fresh token: each is told to sign in, none reaches the provider.
            let rejected = try await alice.stored().token.accessToken
            for round in 0..<10 {
                let again = await #expect(throws: ProviderError.self) {
                    // A token asked to last a day, or one that replaces the one a server refused.
                    if round.isMultiple(of: 2) {
                        _ = try await alice.accessToken(validFor: 86_400)
                    } else {
                        try await alice.refresh(replacing: rejected)
                    }
                }
                #expect(again?.code == .signInRequired)
            }
            #expect(dev.faults.count("token.refresh_token") == 0, "the rejected refresh token was not sent again")
            // A token that is still valid is still handed out: nothing was deleted.
            #expect(try await alice.accessToken(minimumValidity: 0).isEmpty == false)
            // Asked explicitly, the refresh is tried once more.
            await #expect(throws: ProviderError.self) { try await alice.refresh() }
            #expect(dev.faults.count("token.refresh_token") == 1)
            // A new sign-in clears the mark.
            let signedIn = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            #expect(signedIn.id == alice.id)
            #expect(try await alice.stored().state.needsSignIn == false)
            _ = try await alice.accessToken(validFor: 86_400)
            #expect(dev.faults.count("token.refresh_token") == 2)
        }
    }
}
