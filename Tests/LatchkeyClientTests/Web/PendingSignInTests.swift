import Crypto
import Foundation
import Latchkey
import LatchkeyTestSupport
import Testing

/// What anonymous requests can do to pending sign-ins: cancel none that is not theirs, and keep
/// no more than a few each in the shared store, which sweeps the expired ones on a schedule.
@Suite("Pending web sign-ins")
struct PendingSignInTests {
    @Test("a redirect with a state of another site leaves the browser's sign-in in place, and it completes")
    func forgedRedirect() async throws {
        try await WebSignInTests.withApp { _, app in
            let browser = TestBrowser()
            let form = try await browser.open(app.url("login"))
            #expect(form.url.path == "/authorize")
            // Another site sends the browser to the app's callback (a top-level navigation
            // carries the sign-in cookie) with a code and state of its own.
            let forged = try await browser.open(
                app.url("callback").appending(queryItems: [
                    .init(name: "code", value: "attacker-code"), .init(name: "state", value: "attacker-state"),
                ]))
            #expect(forged.status == 400)
            #expect(forged.body.contains("still waiting"), "\(forged.body)")
            #expect(await browser.cookies["latchkey-sign-in"] != nil, "the sign-in cookie is kept")
            let page = try await browser.signInAtDevProvider(form, username: "alice", password: "alice-password")
            #expect(page.status == 200)
            #expect(try await browser.open(app.base).body.hasPrefix("Signed in"), "the user's own sign-in completed")
        }
    }

    @Test(
        "one client address keeps at most the policy's pending sign-ins (429 beyond), and the sweeper removes them once expired",
        .timeLimit(.minutes(1)))
    func boundedAndSwept() async throws {
        let clock = TestClock()
        let store = CredentialStore(storage: InMemoryCredentialStorage(), clock: clock)
        let policy = WebSessionPolicy(pendingSignInLifetime: .seconds(600), pendingSignInsPerClient: 3)
        try await WebSignInTests.withApp(store: store, policy: policy, sweepEvery: .milliseconds(20)) { _, app in
            let web = try #require(store.capabilities.webSessions)
            let start = clock.date
            var handles: [String] = []
            for _ in 0..<3 {
                let browser = TestBrowser()
                let answer = try await browser.send(app.url("login"), method: "GET", form: nil)
                #expect(answer.status / 100 == 3, "\(answer.status)")
                let cookie = try #require(await browser.cookies["latchkey-sign-in"])
                handles.append(SHA256.hash(data: Data(cookie.utf8)).map { String(format: "%02x", $0) }.joined())
            }
            for handle in handles { #expect(try await web.pendingSignIn(handle: handle, now: start) != nil) }
            let refused = try await TestBrowser().send(app.url("login"), method: "GET", form: nil)
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") == "600")
            #expect(refused.header("Set-Cookie") == nil, "nothing was kept for it")
            // Past their lifetime, the sweeper removes them (read as of `start`, when they were
            // still live: only a removed row reads as nothing).
            clock.advance(601)
            while try await web.pendingSignIn(handle: handles[0], now: start) != nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            for handle in handles { #expect(try await web.pendingSignIn(handle: handle, now: start) == nil) }
            let again = try await TestBrowser().send(app.url("login"), method: "GET", form: nil)
            #expect(again.status / 100 == 3)
        }
    }
}
