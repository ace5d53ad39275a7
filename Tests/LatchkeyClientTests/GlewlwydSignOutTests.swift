import Foundation
import Latchkey
import Testing

/// Sign-out at a real provider with no global sign-out of its own.
@Suite("Sign-out at Glewlwyd", .enabled(if: Glewlwyd.isEnabled))
struct GlewlwydSignOutTests {
    @Test("global sign-out is marked unsupported, and the fallback revokes the grant and ends the session")
    func fallback() async throws {
        try await withHarness(.glewlwyd) { harness in
            await harness.store.register(harness.provider)
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let token = try await credential.token
            let result = await harness.store.signOut(.current, options: .global)
            #expect(result.signedOutLocally)
            let global = try #require(result.steps.first { $0.kind == .globalSignOut })
            #expect(global.status == .skipped)
            #expect(global.reason?.code == .unsupported)
            #expect(result.steps.first { $0.kind == .revoke(.refreshToken) }?.status == .succeeded)
            #expect(result.steps.first { $0.kind == .revoke(.accessToken) }?.status == .succeeded)
            // Glewlwyd ends its session in a browser: the step carries the URL to open.
            let endSession = try #require(result.steps.first { $0.kind == .endSession })
            #expect(endSession.status == .skipped)
            #expect(endSession.browserURL?.absoluteString.contains("id_token_hint=") == true)
            #expect(try await harness.isActive(token.accessToken) == false)
            #expect(try await harness.isActive(token.refreshToken) == false)
            #expect(try await harness.store.all().isEmpty)
        }
    }
}
