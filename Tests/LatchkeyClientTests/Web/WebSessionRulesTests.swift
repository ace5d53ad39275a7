import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// The rules of web sessions: return paths and lifetimes as pure values, then lifetimes, an
/// offline sign-out and the cookie's attributes against the development provider.
@Suite("Web sessions: lifetimes, offline sign-out, cookies")
struct WebSessionRulesTests {
    @Test(
        "a return path is a path of the app, never another site",
        arguments: [
            ("/protected?tab=2", "/protected?tab=2"), ("//evil.example/", "/"), ("https://evil.example/", "/"),
            ("/\\evil.example", "/"), ("", "/"), ("protected", "/"), ("/a\r\nSet-Cookie: x", "/"),
        ])
    func returnPaths(_ given: String, _ expected: String) {
        #expect(WebSessions.safeReturnPath(given) == expected)
    }

    @Test("a session's status follows its idle and absolute lifetimes; its last use is written once a minute")
    func statusTable() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let policy = WebSessionPolicy(
            idleLifetime: .seconds(600), absoluteLifetime: .seconds(1_800), touchInterval: .seconds(60))
        let session = WebSession(
            handle: "h", credentialID: "c", issuer: "i", subject: nil, providerSessionID: nil, createdAt: start,
            lastSeenAt: start, expiresAt: start.addingTimeInterval(1_800))
        let rows: [(TimeInterval, WebSessionStatus)] = [
            (0, .active(touch: false)), (59, .active(touch: false)), (60, .active(touch: true)),
            (599, .active(touch: true)), (600, .idle), (1_800, .expired),
        ]
        for (elapsed, expected) in rows {
            #expect(WebSessionStatus(session, now: start.addingTimeInterval(elapsed), policy: policy) == expected)
        }
    }

    @Test("an idle session and one past its absolute lifetime are signed out, their tokens revoked")
    func lifetimes() async throws {
        let clock = TestClock()
        let store = CredentialStore(storage: InMemoryCredentialStorage(), clock: clock)
        let policy = WebSessionPolicy(
            idleLifetime: .seconds(600), absoluteLifetime: .seconds(1_800), touchInterval: .seconds(60))
        try await WebSignInTests.withApp(store: store, policy: policy) { _, app in
            let idle = TestBrowser()
            _ = try await WebSignInTests.signIn(idle, app)
            let refreshToken = try await WebSignInTests.refreshToken(app, try await WebSignInTests.session(idle, app))
            let busy = TestBrowser()
            _ = try await WebSignInTests.signIn(busy, app, as: "bob")
            #expect(try await busy.open(app.base).body.hasPrefix("Signed in"), "signed in")
            for _ in 0..<3 {
                clock.advance(500)
                #expect(try await busy.open(app.base).body.hasPrefix("Signed in"), "used within the idle lifetime")
            }
            #expect(try await idle.open(app.base).body == "Signed out", "idle for 1,500 s")
            #expect(!(try await app.sessions.provider.introspect(refreshToken, kind: .refreshToken).active))
            clock.advance(400)
            #expect(try await busy.open(app.base).body == "Signed out", "1,900 s after signing in")
            #expect(try await store.all().isEmpty)
        }
    }

    @Test("a sign-out while the provider is unreachable ends the session and queues the revocation")
    func offlineSignOut() async throws {
        try await WebSignInTests.withApp { provider, app in
            let browser = TestBrowser()
            _ = try await WebSignInTests.signIn(browser, app)
            let refreshToken = try await WebSignInTests.refreshToken(
                app, try await WebSignInTests.session(browser, app))
            let cookie = try #require(await browser.cookies["latchkey-session"])
            provider.faults.isOffline = true
            let answer = try await browser.submit(
                app.url("logout"), ["csrf_token": app.sessions.csrfToken(cookie: cookie)], follow: false)
            #expect(answer.status == 303)
            #expect(try await app.sessions.session(cookie: cookie) == nil)
            let result = try #require(await app.signOuts.results.first?.signOut)
            #expect(result.signedOutLocally)
            #expect(result.steps.contains { $0.status == .queued }, "the result says the revocation is queued")
            #expect(try await app.sessions.store.outboxEntries().count >= 1)
            provider.faults.isOffline = false
            _ = await app.sessions.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(try await app.sessions.store.outboxEntries().isEmpty)
            #expect(!(try await app.sessions.provider.introspect(refreshToken, kind: .refreshToken).active))
        }
    }

    @Test("served as https, the cookies are Secure with the __Host- prefix")
    func secureCookies() async throws {
        try await WebSignInTests.withApp(publicBase: URL(string: "https://app.example")) { _, app in
            let login = try await TestBrowser().send(app.url("login"), method: "GET", form: nil)
            let setCookie = try #require(login.header("Set-Cookie"))
            #expect(setCookie.hasPrefix("__Host-latchkey-sign-in="))
            #expect(
                setCookie.contains("Secure") && setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax"))
            #expect(!setCookie.contains("Domain="))
        }
    }
}
