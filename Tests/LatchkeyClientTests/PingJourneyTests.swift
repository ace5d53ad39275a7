import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// Ping journeys against the development provider's own implementation of AM's REST API, over
/// real HTTP on loopback: the journeys, the SSO session, tokens minted through it, and the
/// guide's revoke-versus-logout, each checked on the server side.
@Suite("Ping journeys")
struct PingJourneyTests {
    /// A development provider, a journey client of its realm, and a store.
    struct Setup: Sendable {
        let dev: DevProvider
        let ping: PingJourneyProvider
        let store: CredentialStore
        /// A confidential client of the realm, to introspect the test client's tokens.
        let inspector: OpenIDProvider

        /// Whether the provider says `token` is active. A token never issued fails the test.
        func isActive(_ token: String?) async throws -> Bool {
            let token = try #require(token, "this token was never issued")
            return try await inspector.introspect(token, kind: .accessToken).active
        }

        /// Whether AM (the development provider) says the session is valid.
        func isValid(_ session: String?) async throws -> Bool {
            try await ping.validateSession(try #require(session, "no session was issued")).isValid
        }

        /// Walks the Login journey as alice and signs in: the credential and its first tokens.
        func signIn() async throws -> (Credential, Token) {
            let credential = try await ping.signIn(try await PingJourneyTests.walk(ping), into: store)
            return (credential, try await credential.token)
        }

        func stop() async { await dev.stop() }
    }

    @Test("a sign-in whose ID token is rejected ends the journey's session too: nothing is left signed in")
    func rejectedIDTokenEndsTheSession() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        // The provider signs with RS256 and ES256; this client accepts neither.
        let strict = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: setup.dev.issuer, realm: "alpha", clientID: "latchkey-cli", idTokenAlgorithms: [.ps256]),
            transport: transport)
        let session = try await Self.walk(strict)
        #expect(try await setup.isValid(session.value))
        let error = await #expect(throws: ProviderError.self) {
            _ = try await strict.signIn(session, into: setup.store)
        }
        #expect(error?.code == .idTokenRejected)
        #expect(try await setup.isValid(session.value) == false, "the session no one holds is ended")
        #expect(await setup.dev.liveGrants(of: "alice") == 0, "and the grant minted from it revoked")
        #expect(try await setup.store.all().isEmpty)
    }

    static func setUp(
        journey: String = "Login", cookieName: String? = nil, clock: (any LatchkeyClock)? = nil
    ) async throws -> Setup {
        let clock = clock ?? SystemClock()
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        let ping = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: dev.issuer, realm: "alpha", journey: journey, clientID: "latchkey-cli",
                cookieName: cookieName),
            transport: transport, logger: TraceLog.logger("ping"), clock: clock)
        let store = CredentialStore(
            storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock)
        await store.register(ping)
        TraceLog.register(secret: "latchkey-confidential-secret")
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.realmIssuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret")),
            transport: transport)
        return Setup(dev: dev, ping: ping, store: store, inspector: inspector)
    }

    /// Walks the journey with `username` and `password`, every other callback taking its default.
    static func walk(
        _ ping: PingJourneyProvider, username: String = "alice", password: String = "alice-password",
        pages: (JourneyPage) -> Void = { _ in }
    ) async throws -> JourneySession {
        var step = try await ping.startJourney()
        for _ in 0..<10 {
            switch step {
            case .success(let session):
                return session
            case .page(var page):
                pages(page)
                for index in page.callbacks.indices {
                    switch page.callbacks[index].kind {
                    case .name: page.callbacks[index].setText(username)
                    case .password: page.callbacks[index].setText(password)
                    default:
                        if let answer = page.callbacks[index].defaultAnswer { page.callbacks[index].setValue(answer) }
                    }
                }
                step = try await ping.next(page)
            }
        }
        Issue.record("the journey did not end")
        throw CancellationError()
    }

    @Test("the one-page Login journey: a session, then OAuth tokens minted from it, kept in one credential")
    func loginJourney() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        var pages: [JourneyPage] = []
        let session = try await Self.walk(setup.ping) { pages.append($0) }
        #expect(pages.count == 1)
        #expect(pages.first?.callbacks.map(\.type) == ["NameCallback", "PasswordCallback"])
        #expect(pages.first?.callbacks.first?.kind == .name(prompt: "User Name"))
        #expect(session.realm == "/alpha")
        let validity = try await setup.ping.validateSession(session.value)
        #expect(validity.isValid && validity.userID == "alice")

        let credential = try await setup.ping.signIn(session, into: setup.store)
        let token = try await credential.token
        #expect(token.sessionToken == session.value)
        #expect(token.refreshToken != nil && token.idToken != nil)
        #expect(token.provider.issuer == setup.dev.realmIssuer.absoluteString)
        #expect(try await credential.userInfo()["preferred_username"] == .string("alice"))
        #expect(try await setup.isActive(token.accessToken))
        #expect(setup.dev.faults.count("authorize.session") == 1)
        #expect(try await credential.stored().metadata.preferredUsername == "alice")
    }

    @Test("the stepped journey: a text output, a choice with its default, a hidden value sent back as it came")
    func steppedJourney() async throws {
        let setup = try await Self.setUp(journey: "SteppedLogin")
        defer { Task { await setup.stop() } }
        var pages: [JourneyPage] = []
        let session = try await Self.walk(setup.ping) { pages.append($0) }
        try #require(pages.count == 2)
        guard case .textOutput(let message, 0) = pages[0].callbacks[0].kind else {
            Issue.record("the first callback is not a text output: \(pages[0].callbacks[0])")
            return
        }
        #expect(message.contains("Welcome"))
        #expect(
            pages[1].callbacks[1].kind
                == .choice(prompt: "Stay signed in on this device?", choices: ["No", "Yes"], defaultChoice: 1))
        guard case .hiddenValue(let id, let value) = pages[1].callbacks[2].kind else {
            Issue.record("the third callback is not a hidden value")
            return
        }
        #expect(id == "journeyCheck" && !value.isEmpty)
        #expect(pages[1].stage == "Verify")
        #expect(try await setup.ping.validateSession(session.value).isValid)

        // A hidden value that does not come back as sent fails the journey.
        guard case .page(var first) = try await setup.ping.startJourney() else {
            Issue.record("no first page")
            return
        }
        first.callbacks[1].setText("alice")
        guard case .page(var second) = try await setup.ping.next(first) else {
            Issue.record("no second page")
            return
        }
        second.callbacks[0].setText("alice-password")
        second.callbacks[2].setText("something else")
        await #expect(throws: ProviderError.self) { try await setup.ping.next(second) }
    }

    @Test("a wrong password fails with AM's message; the password is in no error; nothing is stored")
    func wrongPassword() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        do {
            _ = try await Self.walk(setup.ping, password: "not-alices-password-at-all")
            Issue.record("the journey signed in")
        } catch let error as ProviderError {
            #expect(error.status == 401)
            #expect(error.endpoint == .journey)
            let refusal = try #require(error.underlying as? PingError)
            #expect(refusal.message == "Login failure" && refusal.code == 401 && refusal.reason == "Unauthorized")
            #expect(error.errorDescription == "Login failure")
            #expect(!error.description.contains("not-alices-password-at-all"))
        }
        #expect(try await setup.store.all().isEmpty)
    }

    @Test("revoke ends the OAuth tokens and keeps the session; the next access token is minted through it")
    func revokeKeepsTheSession() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (credential, before) = try await setup.signIn()

        let result = await credential.revoke()
        #expect(result.succeeded && !result.removedFromStore)
        #expect(result.outcomes[.sessionToken] == nil, "the session is not revoked")
        #expect(try await setup.isActive(before.accessToken) == false)
        #expect(try await setup.isActive(before.refreshToken) == false)
        #expect(try await setup.isValid(before.sessionToken))
        let kept = try await credential.token
        #expect(kept.accessToken == nil && kept.refreshToken == nil && kept.sessionToken == before.sessionToken)

        // Many callers at once: one mint through the session.
        let minted = setup.dev.faults.count("authorize.session")
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 { group.addTask { try await credential.accessToken() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(setup.dev.faults.count("authorize.session") == minted + 1)
        #expect(try await setup.isActive(tokens.first))
        #expect(try await credential.token.refreshToken != nil)
        #expect(try await setup.isValid(before.sessionToken))
    }

    @Test("sign-out logs the session out and revokes every token, checked on the server")
    func signOutEndsEverything() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (_, token) = try await setup.signIn()

        let result = await setup.store.signOut()
        guard case .complete(let steps) = result else {
            Issue.record("expected complete, got \(result)")
            return
        }
        #expect(steps.contains { $0.kind == .sessionLogout && $0.status == .succeeded })
        #expect(steps.contains { $0.kind.description == "session-logout" })
        #expect(try await setup.isValid(token.sessionToken) == false)
        #expect(try await setup.isActive(token.accessToken) == false)
        #expect(try await setup.isActive(token.refreshToken) == false)
        #expect(try await setup.store.all().isEmpty)
    }

    @Test("AM's session logout alone revokes no OAuth token: the sign-out must revoke them too")
    func logoutAloneLeavesTokens() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (_, token) = try await setup.signIn()
        try await setup.ping.logout(session: try #require(token.sessionToken))
        #expect(try await setup.isValid(token.sessionToken) == false)
        #expect(try await setup.isActive(token.accessToken), "the access token outlives the session")
        #expect(try await setup.isActive(token.refreshToken), "so does the refresh token")
        // Logging out a session that has ended already is a success (the outbox relies on it).
        try await setup.ping.logout(session: try #require(token.sessionToken))
    }

    @Test("offline, the session logout is queued with the revocations; draining ends the session and the tokens")
    func offlineSignOut() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (_, token) = try await setup.signIn()
        setup.dev.faults.isOffline = true
        let result = await setup.store.signOut(.current, options: SignOutOptions(policy: .alwaysLocal))
        guard case .partial(let steps) = result else {
            Issue.record("expected partial, got \(result)")
            return
        }
        #expect(steps.contains { $0.kind == .sessionLogout && $0.status == .queued })
        #expect(try await setup.store.all().isEmpty)
        let queued = Set(try await setup.store.outboxEntries().map(\.action))
        #expect(queued == [.revoke(.accessToken), .revoke(.refreshToken), .revoke(.sessionToken)])

        setup.dev.faults.isOffline = false
        let report = await setup.store.drainOutbox(DrainOptions(includeNotDue: true))
        #expect(report.revoked == 3 && report.isClean)
        #expect(try await setup.isValid(token.sessionToken) == false)
        #expect(try await setup.isActive(token.accessToken) == false)
        #expect(try await setup.isActive(token.refreshToken) == false)
    }

    @Test("the session header's name comes from serverinfo; a wrong one is refused, never taken for a logout")
    func cookieName() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let name = try await setup.ping.sessionCookieName()
        #expect(name == setup.dev.sessionCookieName)
        #expect(name != "iPlanetDirectoryPro")

        let wrong = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: setup.dev.issuer, realm: "alpha", clientID: "latchkey-cli",
                cookieName: "iPlanetDirectoryPro"),
            transport: transport, logger: TraceLog.logger("ping"))
        let session = try await Self.walk(wrong)
        await #expect(throws: ProviderError.self) { try await wrong.signIn(session, into: setup.store) }
        do {
            try await wrong.logout(session: session.value)
            Issue.record("a logout AM refused was taken for a success")
        } catch {
            #expect(error.status == 401)
        }
        #expect(try await setup.isValid(session.value), "the session was not ended")
    }

    @Test("a session AM no longer accepts, and no refresh token: the account must sign in again")
    func deadSession() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (credential, token) = try await setup.signIn()
        try await setup.ping.logout(session: try #require(token.sessionToken))
        _ = await credential.revoke()
        do {
            _ = try await credential.accessToken()
            Issue.record("an access token came from an ended session")
        } catch {
            #expect(error.requiresSignIn)
        }
        #expect(try await credential.stored().state.needsSignIn == true)
    }

    @Test("an ended OIDC session ends its SSO session too, as AM's end-session does")
    func endSessionEndsTheSession() async throws {
        let setup = try await Self.setUp()
        defer { Task { await setup.stop() } }
        let (_, token) = try await setup.signIn()
        let result = await setup.store.signOut(
            .current, options: SignOutOptions(endProviderSession: true, revokeTokens: false))
        #expect(result.steps.contains { $0.kind == .endSession && $0.status == .succeeded })
        #expect(try await setup.isValid(token.sessionToken) == false)
    }
}
