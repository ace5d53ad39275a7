import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import Testing

/// The same scenarios against the development provider and against Glewlwyd.
@Suite("Client scenarios")
struct ClientScenarioTests {
    @Test("password sign-in stores a verified credential with account metadata", arguments: ProviderKind.enabled)
    func passwordSignIn(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let stored = try await credential.stored()
            #expect(stored.metadata.preferredUsername == "alice")
            #expect(stored.metadata.email == "alice@example.com")
            #expect(stored.metadata.issuer == harness.provider.identity.issuer)
            #expect(stored.token.refreshToken != nil)
            #expect(try await harness.store.default?.id == credential.id)
            let wrong = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.signIn(
                    .password(username: "alice", password: "nope"), into: harness.store)
            }
            #expect(wrong?.isRetryable == false)
            #expect(try await harness.store.all().count == 1)
        }
    }

    @Test(
        "a valid access token is returned as stored; a forced refresh stores the new one",
        arguments: ProviderKind.enabled)
    func refresh(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let first = try await credential.accessToken()
            #expect(try await credential.accessToken() == first)
            let before = try await credential.token
            let refreshed = try await credential.refresh()
            #expect(refreshed.accessToken != first)
            #expect(try await credential.token == refreshed)
            // A refresh answer without a refresh token keeps the old one (Glewlwyd sends none).
            #expect(refreshed.refreshToken != nil)
            if kind == .glewlwyd { #expect(refreshed.refreshToken == before.refreshToken) }
            if kind == .dev { #expect(refreshed.refreshToken != before.refreshToken) }
            // The ID token stays for a later end-session hint even when the refresh sends none.
            #expect(refreshed.idToken != nil)
            #expect(try await harness.isActive(refreshed.accessToken))
        }
    }

    @Test("revoking the access token only: it is dead, the refresh token still works", arguments: ProviderKind.enabled)
    func revokeAccessOnly(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let access = try await credential.accessToken()
            let result = await credential.revoke(.accessToken)
            #expect(result.succeeded)
            #expect(result.outcomes[.accessToken]?.isRevoked == true)
            #expect(result.removedFromStore == false)
            #expect(try await credential.token.accessToken == nil)
            #expect(try await harness.isActive(access) == false)
            let fresh = try await credential.accessToken()
            #expect(fresh != access)
            #expect(try await harness.isActive(fresh))
        }
    }

    @Test("revoking the refresh token kills both tokens and removes the credential", arguments: ProviderKind.enabled)
    func revokeRefresh(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let token = try await credential.token
            let result = await credential.revoke(.refreshToken)
            #expect(result.succeeded)
            #expect(result.removedFromStore)
            #expect(try await harness.store.all().isEmpty)
            #expect(try await harness.isActive(token.accessToken) == false)
            let stillUsable = try await harness.inspector.introspect(token.refreshToken ?? "", kind: .refreshToken)
            #expect(stillUsable.active == false)
        }
    }

    @Test("revoke(.all) revokes every token in parallel and reports each", arguments: ProviderKind.enabled)
    func revokeAll(kind: ProviderKind) async throws {
        try await withHarness(kind, scopes: ["openid", "profile", "email", "offline_access", "device_sso"]) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "bob", password: "bob-password"), into: harness.store)
            let token = try await credential.token
            let result = await credential.revoke()
            #expect(result.succeeded)
            #expect(result.removedFromStore)
            #expect(result.outcomes[.accessToken]?.isRevoked == true)
            #expect(result.outcomes[.refreshToken]?.isRevoked == true)
            if kind == .dev {
                #expect(result.outcomes[.deviceSecret]?.isRevoked == true)
                #expect(try await harness.isActive(token.deviceSecret) == false)
            }
            #expect(try await harness.isActive(token.accessToken) == false)
        }
    }

    @Test("userinfo answers the signed-in user's claims", arguments: ProviderKind.enabled)
    func userInfo(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "bob", password: "bob-password"), into: harness.store)
            let claims = try await credential.userInfo()
            #expect(claims["email"] == .string("bob@example.com"))
            #expect(claims["sub"] != nil)
        }
    }

    @Test("a rejected refresh token asks for sign-in and deletes nothing", arguments: ProviderKind.enabled)
    func rejectedRefresh(kind: ProviderKind) async throws {
        try await withHarness(kind) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let token = try await credential.token
            // Revoke the refresh token behind the credential's back.
            try await harness.provider.revoke(try #require(token.refreshToken), kind: .refreshToken)
            let error = await #expect(throws: ProviderError.self) { _ = try await credential.refresh() }
            #expect(error?.requiresSignIn == true)
            #expect(error?.isRetryable == false)
            let stored = try await credential.stored()
            #expect(stored.token.refreshToken == token.refreshToken)
            #expect(stored.state.needsSignIn == true)
        }
    }

    @Test("authorization code with PKCE through a loopback redirect", arguments: ProviderKind.enabled)
    func browserSignIn(kind: ProviderKind) async throws {
        try await withHarness(
            kind,
            tweak: { configuration in
                if kind == .glewlwyd {
                    // A public client, as a CLI is; Glewlwyd wants PKCE and the exact redirect URI.
                    configuration.clientID = "latchkey-cli"
                    configuration.authentication = .none
                }
            }
        ) { harness in
            let listener = NIOLoopbackRedirectListener(port: kind == .glewlwyd ? 8765 : 0)
            let credential = try await harness.provider.signIn(
                .browser(listener: listener, timeout: .seconds(20)) { url in
                    #expect(url.absoluteString.contains("code_challenge_method=S256"))
                    Task { try await Browser.signIn(at: url, harness: harness) }
                },
                into: harness.store)
            let stored = try await credential.stored()
            #expect(stored.metadata.preferredUsername == "alice")
            #expect(try await harness.isActive(stored.token.accessToken))
        }
    }
}
