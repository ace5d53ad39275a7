import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// Web sign-in and sign-out through `LatchkeyHummingbird`, against the development provider,
/// over real HTTP on loopback: a browser of the tests' own (cookies, redirects, forms).
@Suite("Web sign-in, sign-out and back-channel logout")
struct WebSignInTests {
    /// A provider whose client "web-app" is the app on `port` (back-channel logouts to it).
    /// The provider goes by `clock`, as the app does: an ID token it issues is checked against
    /// the same time (a test's clock stands still while a slow run's real time goes on).
    static func provider(port: Int, sessionRequired: Bool? = nil, clock: any LatchkeyClock = SystemClock())
        async throws -> DevProvider
    {
        var configuration = DevProviderConfiguration.default
        configuration.clients.append(WebApp.client(port: port, sessionRequired: sessionRequired))
        return try await DevProvider.start(
            configuration: configuration, signingKeys: try await SharedSigningKeys.get(), now: { clock.date })
    }

    /// Runs `body` with a provider and an app in this process, both stopped after.
    static func withApp(
        sessionRequired: Bool? = nil, store: CredentialStore = .inMemory(),
        policy: WebSessionPolicy = WebSessionPolicy(), publicBase: URL? = nil, sweepEvery: Duration? = nil,
        _ body: (DevProvider, WebApp) async throws -> Void
    ) async throws {
        let port = try await FreePort.pick()
        let provider = try await provider(port: port, sessionRequired: sessionRequired, clock: store.clock)
        let app = try await WebApp.start(
            port: port, issuer: provider.issuer, store: store, policy: policy, publicBase: publicBase,
            sweepEvery: sweepEvery)
        do {
            try await body(provider, app)
        } catch {
            await app.stop()
            await provider.stop()
            throw error
        }
        await app.stop()
        await provider.stop()
    }

    /// Signs `username` in through the provider's form, starting at `path`.
    static func signIn(_ browser: TestBrowser, _ app: WebApp, as username: String = "alice", path: String = "/")
        async throws -> TestBrowser.Page
    {
        let form = try await browser.open(
            app.url("login").appending(queryItems: [.init(name: "return_to", value: path)]))
        #expect(form.status == 200)
        // A browser still signed in at the provider comes straight back (single sign-on).
        guard form.url.path == "/authorize" else { return form }
        return try await browser.signInAtDevProvider(form, username: username, password: "\(username)-password")
    }

    static func refreshToken(_ app: WebApp, _ session: WebSession?) async throws -> String {
        let session = try #require(session)
        return try #require(try await app.sessions.store.credential(for: session.credentialID)?.token.refreshToken)
    }

    static func session(_ browser: TestBrowser, _ app: WebApp) async throws -> WebSession? {
        guard let cookie = await browser.cookies["latchkey-session"] else { return nil }
        return try await app.sessions.session(cookie: cookie)
    }

    @Test("a protected page sends the browser to sign in, and back; the API is called with the user's token")
    func signInAndCallAPI() async throws {
        try await Self.withApp { _, app in
            let browser = TestBrowser()
            let form = try await browser.open(app.url("protected"))
            #expect(form.url.path == "/authorize")
            let page = try await browser.signInAtDevProvider(form, username: "alice", password: "alice-password")
            #expect(page.status == 200)
            #expect(page.body == "API: alice")
            #expect(await browser.cookies["latchkey-sign-in"] == nil, "the sign-in cookie is spent")
            // The cookies: HttpOnly, SameSite=Lax, Path=/, and not Secure on loopback.
            let login = try await browser.send(app.url("login"), method: "GET", form: nil)
            let setCookie = try #require(login.header("Set-Cookie"))
            #expect(
                setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax") && setCookie.contains("Path=/"))
            #expect(!setCookie.contains("Secure"))
        }
    }

    @Test("each sign-in gets a new session id; a callback replayed or without its cookie signs nobody in")
    func noFixation() async throws {
        try await Self.withApp { _, app in
            let browser = TestBrowser()
            await browser.setCookie("latchkey-session", "planted-by-an-attacker")
            _ = try await Self.signIn(browser, app)
            let first = try #require(await browser.cookies["latchkey-session"])
            #expect(first != "planted-by-an-attacker")
            _ = try await Self.signIn(browser, app)
            let second = try #require(await browser.cookies["latchkey-session"])
            #expect(second != first)
            #expect(try await app.sessions.session(cookie: first) == nil, "the browser's old session ended")
            // A callback without a pending sign-in.
            let stray = try await TestBrowser().open(
                app.url("callback").appending(queryItems: [
                    .init(name: "code", value: "x"), .init(name: "state", value: "y"),
                ]))
            #expect(stray.status == 400)
        }
    }

    @Test("sign-out needs the CSRF token, revokes the tokens and ends the provider's session")
    func signOut() async throws {
        try await Self.withApp { provider, app in
            let browser = TestBrowser()
            _ = try await Self.signIn(browser, app)
            let session = try await Self.session(browser, app)
            let refreshToken = try await Self.refreshToken(app, session)
            let cookie = try #require(await browser.cookies["latchkey-session"])
            let noToken = try await browser.submit(app.url("logout"), [:], follow: false)
            #expect(noToken.status == 403)
            let wrongToken = try await browser.submit(app.url("logout"), ["csrf_token": "guess"], follow: false)
            #expect(wrongToken.status == 403)
            let csrf = app.sessions.csrfToken(cookie: cookie)
            let crossSite = try await browser.send(
                app.url("logout"), method: "POST", form: ["csrf_token": csrf],
                headers: ["Origin": "https://evil.example"])
            #expect(crossSite.status == 403)
            #expect(try await app.sessions.session(cookie: cookie) != nil, "refused sign-outs changed nothing")

            let answer = try await browser.submit(app.url("logout"), ["csrf_token": csrf], follow: false)
            #expect(answer.status == 303)
            let location = try #require(answer.header("Location"))
            #expect(location.hasPrefix(provider.issuer.absoluteString + "/end-session"))
            #expect(location.contains("id_token_hint=") && location.contains("post_logout_redirect_uri="))
            let home = try await browser.open(try #require(URL(string: location)))
            #expect(home.body == "Signed out")
            #expect(try await app.sessions.session(cookie: cookie) == nil)
            let introspection = try await app.sessions.provider.introspect(refreshToken, kind: .refreshToken)
            #expect(!introspection.active)
            let result = try #require(await app.signOuts.results.first?.signOut)
            #expect(result.signedOutLocally && result.failures.isEmpty)
            // The provider's back-channel logout for that session found nothing left: still 200.
            #expect(provider.backChannel.deliveries.map(\.status) == [200])
        }
    }

    @Test("a back-channel logout ends the session and its tokens; a replay of the token is refused")
    func backChannelLogout() async throws {
        try await Self.withApp { provider, app in
            let browser = TestBrowser()
            _ = try await Self.signIn(browser, app)
            let refreshToken = try await Self.refreshToken(app, try await Self.session(browser, app))
            provider.backChannel.fault = .replay
            #expect(await provider.endSessions(of: "alice") == 1)
            #expect(provider.backChannel.deliveries.map(\.status) == [200, 400])
            #expect(try await browser.open(app.base).body == "Signed out")
            #expect(!(try await app.sessions.provider.introspect(refreshToken, kind: .refreshToken).active))
            #expect(try await app.sessions.store.all().isEmpty)
        }
    }

    @Test(
        "a logout token with a wrong audience, expired or badly signed is refused and ends nothing",
        arguments: [DevProviderLogoutTokenFault.wrongAudience, .expired, .badSignature])
    func refusedTokens(_ fault: DevProviderLogoutTokenFault) async throws {
        try await Self.withApp { provider, app in
            let browser = TestBrowser()
            _ = try await Self.signIn(browser, app)
            provider.backChannel.fault = fault
            await provider.endSessions(of: "alice")
            let delivery = try #require(provider.backChannel.deliveries.first)
            #expect(delivery.status == 400)
            #expect(try await Self.session(browser, app) != nil)
        }
    }

    @Test("draft-06 tokens (no exp, no typ) naming only sub end every session of that user, no other")
    func subjectOnly() async throws {
        try await Self.withApp(sessionRequired: false) { provider, app in
            provider.backChannel.shape = .draft06
            let (laptop, phone, bobs) = (TestBrowser(), TestBrowser(), TestBrowser())
            _ = try await Self.signIn(laptop, app)
            _ = try await Self.signIn(phone, app)
            _ = try await Self.signIn(bobs, app, as: "bob")
            let token = try #require(
                try await provider.makeLogoutToken(clientID: "web-app", subject: nil, sid: nil, shape: .draft06)
                    as String?)
            #expect(!token.isEmpty)
            await provider.endSessions(of: "alice")
            #expect(provider.backChannel.deliveries.map(\.status).allSatisfy { $0 == 200 })
            #expect(try await Self.session(laptop, app) == nil)
            #expect(try await Self.session(phone, app) == nil)
            #expect(try await Self.session(bobs, app) != nil)
        }
    }

    @Test("a logout token for a sid no session has is a 200 that ends nothing")
    func unknownSession() async throws {
        try await Self.withApp { provider, app in
            let browser = TestBrowser()
            _ = try await Self.signIn(browser, app)
            let token = try await provider.makeLogoutToken(clientID: "web-app", subject: nil, sid: "no-such-sid")
            let answer = try await TestBrowser().submit(app.url("backchannel-logout"), ["logout_token": token])
            #expect(answer.status == 200)
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(try await Self.session(browser, app) != nil)
            let garbage = try await TestBrowser().submit(app.url("backchannel-logout"), ["logout_token": "a.b.c"])
            #expect(garbage.status == 400)
            #expect(garbage.body.contains("invalid_request"))
        }
    }
}
