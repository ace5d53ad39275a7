import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing

/// The moto Cognito emulator `scripts/providers/cognito start` left running, if any.
enum Moto {
    struct Environment: Decodable, Sendable {
        var endpoint: String
        var region: String
        var userPoolId: String
        var clientId: String
        /// The app client that rotates refresh tokens (`scripts/providers/cognito_server.py`).
        var rotatingClientId: String?
        var pid: Int32
    }

    static var environmentFile: URL {
        if let path = ProcessInfo.processInfo.environment["LATCHKEY_COGNITO_ENV"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".providers/cognito/env.json")
    }

    static var environment: Environment? {
        guard let data = try? Data(contentsOf: environmentFile),
            let environment = try? JSONDecoder().decode(Environment.self, from: data), kill(environment.pid, 0) == 0
        else { return nil }
        return environment
    }

    /// Run when moto runs, or always when providers are required (then a missing one fails).
    static var isEnabled: Bool { providersRequired || environment != nil }

    static func provider(endpoint: String? = nil, rotating: Bool = false, rotation: Bool? = nil) throws
        -> CognitoProvider
    {
        let environment = try #require(
            environment, "moto is not running: start it with scripts/providers/cognito start")
        let client =
            rotating
            ? try #require(environment.rotatingClientId, "restart moto with the current scripts/providers/cognito")
            : environment.clientId
        return CognitoProvider(
            configuration: CognitoConfiguration(
                region: environment.region, userPoolID: environment.userPoolId, clientID: client,
                endpoint: URL(string: endpoint ?? environment.endpoint),
                hostedUIDomain: URL(string: "https://latchkey-tests.auth.us-east-1.amazoncognito.com"),
                logoutURI: URL(string: "http://127.0.0.1:8765/logged-out"), refreshTokenRotation: rotation),
            transport: transport, logger: TraceLog.logger("cognito"))
    }
}

@Suite("Cognito (moto)", .serialized, .enabled(if: Moto.isEnabled))
struct CognitoTests {
    let password = ["alice": "Alice-password-1", "bob": "Bob-password-1"]

    func device(_ provider: CognitoProvider) async -> CredentialStore {
        let store = CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"))
        await store.register(provider)
        return store
    }

    func signIn(_ provider: CognitoProvider, _ store: CredentialStore, _ user: String = "alice") async throws
        -> Credential
    {
        try await provider.signIn(username: user, password: password[user] ?? "", into: store)
    }

    func status(_ result: SignOutResult, _ step: String) -> SignOutStep.Status? {
        result.steps.first { $0.kind.description == step }?.status
    }

    @Test("InitiateAuth signs in with a verified ID token; GetUser answers; refresh keeps the refresh token")
    func signInAndRefresh() async throws {
        let provider = try Moto.provider()
        let store = await device(provider)
        let credential = try await signIn(provider, store)
        let stored = try await credential.stored()
        #expect(stored.metadata.preferredUsername == "alice")
        #expect(stored.metadata.email == "alice@example.com")
        let claims = try await credential.userInfo()
        #expect(claims["email"] == .string("alice@example.com"))
        let refreshed = try await credential.refresh()
        #expect(refreshed.refreshToken == stored.token.refreshToken)
        #expect(refreshed.accessToken != stored.token.accessToken)
        let wrong = await #expect(throws: ProviderError.self) {
            _ = try await provider.passwordToken(username: "alice", password: "nope")
        }
        #expect((wrong?.underlying as? CognitoError)?.kind == .notAuthorized)
    }

    @Test(
        "1 and 7. local sign-out: RevokeToken ends this device's refresh and access tokens; the other device keeps working"
    )
    func localSignOut() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        let b = await device(provider)
        let mine = try await signIn(provider, a).token
        let other = try await signIn(provider, b)
        let result = await a.signOut(.current, options: .local)
        guard case .complete = result else {
            Issue.record("expected complete, got \(result)")
            return
        }
        #expect(status(result, "revoke-refresh-token") == .succeeded)
        #expect(status(result, "revoke-access-token") == .skipped)
        #expect(try await a.all().isEmpty)
        #expect(try await a.outboxEntries().isEmpty)
        let refresh = await #expect(throws: ProviderError.self) {
            _ = try await provider.exchangeRefreshToken(of: mine)
        }
        #expect(refresh?.requiresSignIn == true)
        let call = await #expect(throws: ProviderError.self) {
            _ = try await provider.userInfo(accessToken: try #require(mine.accessToken))
        }
        #expect((call?.underlying as? CognitoError)?.kind == .notAuthorized, "the access tokens issued with it end too")
        #expect(try await other.userInfo()["email"] == .string("alice@example.com"))
    }

    @Test("2 and 6. global sign-out invalidates every device: the other device's call and refresh fail")
    func globalSignOut() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        let b = await device(provider)
        _ = try await signIn(provider, a, "bob")
        let other = try await signIn(provider, b, "bob")
        let result = await a.signOut(.current, options: .global)
        #expect(result.signedOutLocally)
        #expect(status(result, "global-signout") == .succeeded)
        #expect(status(result, "end-session") == nil)
        let call = await #expect(throws: ProviderError.self) { _ = try await other.userInfo() }
        #expect(call?.requiresSignIn == true)
        let refresh = await #expect(throws: ProviderError.self) { _ = try await other.refresh() }
        #expect(refresh?.requiresSignIn == true)
    }

    @Test("3. a cancelled sign-out changes nothing")
    func cancelled() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        let credential = try await signIn(provider, a)
        let result = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await a.signOut(.current, options: .global)
        }.value
        #expect(result.signedOutLocally == false)
        #expect(try await credential.userInfo()["email"] != nil)
    }

    @Test("4. global sign-out with no network: server-first keeps the tokens and fails")
    func offline() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        let credential = try await signIn(provider, a)
        // The same pool, unreachable: a port nothing listens on.
        await a.register(try Moto.provider(endpoint: "http://127.0.0.1:9"))
        var options = SignOutOptions.global
        options.policy = .serverFirst
        let result = await a.signOut(.current, options: options)
        guard case .failed = result else {
            Issue.record("expected failed, got \(result)")
            return
        }
        #expect(try await a.all().count == 1)
        #expect(status(result, "global-signout") == .failed)
        await a.register(provider)
        #expect(try await credential.userInfo()["email"] != nil)
    }

    @Test("5. global sign-out with an expired access token refreshes first")
    func expired() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        let credential = try await signIn(provider, a)
        var token = try await credential.token
        token.expiresAt = Date().addingTimeInterval(-60)  // moto never expires tokens itself
        _ = try await a.update(credential.id, token: token)
        let result = await a.signOut(.current, options: .global)
        #expect(result.signedOutLocally)
        #expect(status(result, "refresh") == .succeeded)
        #expect(status(result, "global-signout") == .succeeded)
    }

    @Test("ending the session gives the hosted UI's logout URL to open in a browser")
    func hostedUILogout() async throws {
        let provider = try Moto.provider()
        let a = await device(provider)
        _ = try await signIn(provider, a)
        var options = SignOutOptions.local
        options.endProviderSession = true
        let result = await a.signOut(.current, options: options)
        let url = try #require(result.browserURLs.first)
        #expect(
            url.absoluteString.hasPrefix("https://latchkey-tests.auth.us-east-1.amazoncognito.com/logout?client_id="))
        #expect(url.absoluteString.contains("logout_uri="))
    }
}
