import Foundation
import Latchkey
import LatchkeyTestSupport
import Testing

/// An app client that rotates refresh tokens (AWS's `RefreshTokenRotationType`), at the
/// project's Cognito server (moto and `scripts/providers/cognito_server.py`): refresh goes
/// through `GetTokensFromRefreshToken`, and the new refresh token it returns is the one kept.
@Suite("Cognito refresh token rotation (moto with the project's extension)", .serialized, .enabled(if: Moto.isEnabled))
struct CognitoRotationTests {
    func signIn(_ provider: CognitoProvider) async throws -> (CredentialStore, Credential) {
        let store = CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"))
        await store.register(provider)
        return (store, try await provider.signIn(username: "dave", password: "Dave-password-1", into: store))
    }

    @Test(
        "found out from the refusal of REFRESH_TOKEN_AUTH: each refresh stores the new refresh token; the old one is refused"
    )
    func foundOut() async throws {
        let provider = try Moto.provider(rotating: true)
        let (_, dave) = try await signIn(provider)
        let first = try #require(try await dave.token.refreshToken)
        let refreshed = try await dave.refresh()
        let second = try #require(refreshed.refreshToken)
        #expect(second != first, "rotated")
        let again = try await dave.refresh()
        #expect(again.refreshToken != second)
        #expect(try await dave.userInfo()["email"] == .string("dave@example.com"))
        // The rotated-out token is refused: whoever replays it must sign in again.
        var stale = again
        stale.refreshToken = first
        let reuse = await #expect(throws: ProviderError.self) { _ = try await provider.exchangeRefreshToken(of: stale) }
        #expect(reuse?.code == .signInRequired)
        #expect((reuse?.underlying as? CognitoError)?.kind == .refreshTokenReuse)
    }

    @Test(
        "configured: twenty callers at once make one refresh, and the chain goes on; GlobalSignOut ends the rotated token"
    )
    func configured() async throws {
        let provider = try Moto.provider(rotating: true, rotation: true)
        let (_, dave) = try await signIn(provider)
        let before = try await dave.token
        try await dave.reject(accessToken: try #require(before.accessToken))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await dave.accessToken() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1, "one refresh for all")
        let rotated = try await dave.token
        #expect(rotated.refreshToken != before.refreshToken)
        #expect(try await dave.refresh().refreshToken != rotated.refreshToken, "the chain is alive")
        // GlobalSignOut ends the rotated refresh token too.
        let current = try await dave.token
        try await provider.globalSignOut(accessToken: try #require(current.accessToken))
        let ended = await #expect(throws: ProviderError.self) {
            _ = try await provider.exchangeRefreshToken(of: current)
        }
        #expect(ended?.code == .signInRequired)
    }

    @Test("RevokeToken (a sign-out of this device) ends the rotated refresh token and the access tokens issued with it")
    func revoked() async throws {
        let provider = try Moto.provider(rotating: true, rotation: true)
        let (store, dave) = try await signIn(provider)
        let first = try await dave.token
        let rotated = try await dave.refresh()
        #expect(rotated.refreshToken != first.refreshToken)
        let result = await store.signOut(.current, options: .local)
        #expect(result.steps.first { $0.kind.description == "revoke-refresh-token" }?.status == .succeeded)
        for token in [rotated, first] {
            let refresh = await #expect(throws: ProviderError.self) {
                _ = try await provider.exchangeRefreshToken(of: token)
            }
            #expect(refresh?.requiresSignIn == true)
        }
        let call = await #expect(throws: ProviderError.self) {
            _ = try await provider.userInfo(accessToken: try #require(rotated.accessToken))
        }
        #expect((call?.underlying as? CognitoError)?.kind == .notAuthorized)
    }
}
