import AsyncHTTPClient
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyPostgres
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The example web app's fleet (two processes on one PostgreSQL store) with a real browser:
/// headless Chromium signs in through the provider's own login page to instance A, the session
/// is ended at the provider, the logout token reaches instance B, and A signs the browser out.
@Suite(
    "Web sign-in in Chromium, back-channel logout across the fleet", .serialized,
    .enabled(if: providersRequired || (PostgresServer.isEnabled && WebDriver.isAvailable)))
struct WebBrowserTests {
    /// Runs `body` with a browser window, keeping a screenshot when it fails.
    static func withBrowser(
        _ fleet: WebFleetTests.Fleet? = nil, _ body: (WebDriver.Session) async throws -> Void
    ) async throws {
        let driver = try await WebDriver.start()
        let browser: WebDriver.Session
        do {
            browser = try await driver.session()
        } catch {
            await driver.stop()
            throw error
        }
        do {
            try await body(browser)
        } catch {
            // What the browser shows, and what the instances said, name the cause.
            let page = (try? await browser.text()) ?? "?"
            Issue.record("the page at \((try? await browser.currentURL()) ?? "?") says: \(page.prefix(2_000))")
            for instance in fleet?.instances ?? [] {
                let said = (try? await instance.standardError(until: { _ in true })) ?? ""
                if !said.isEmpty { Issue.record("instance \(instance.processIdentifier) said: \(said.suffix(2_000))") }
            }
            await browser.close()
            await driver.stop()
            throw error
        }
        await browser.close()
        await driver.stop()
    }

    /// Waits until `instance` treats the browser's session cookie as signed out; how long it took.
    static func signedOut(at instance: URL, cookie: String, within limit: Duration) async throws -> Duration {
        let browser = TestBrowser()
        await browser.setCookie("latchkey-session", cookie)
        let started = ContinuousClock.now
        while true {
            if try await browser.open(instance).body.contains("Signed out.") { return ContinuousClock.now - started }
            guard ContinuousClock.now - started < limit else { return ContinuousClock.now - started }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test("the development provider's login page; an admin ends alice's sessions; a replay is refused")
    func devProvider() async throws {
        try await WebFleetTests.withFleet { fleet in
            let provider = try #require(fleet.provider)
            try await Self.withBrowser(fleet) { browser in
                try await browser.navigate(to: fleet.a.appendingPathComponent("protected").absoluteString)
                try await browser.type("alice", into: "input[name=username]")
                try await browser.type("alice-password", into: "input[name=password]")
                try await browser.click("button[type=submit]")
                _ = try await browser.element("#api")
                #expect(try await browser.text().contains("The API says you are alice"))
                let cookie = try #require(try await browser.cookies()["latchkey-session"])
                let refreshToken = try await fleet.onlyRefreshToken()

                provider.backChannel.fault = .replay
                #expect(await provider.endSessions(of: "alice") == 1)
                #expect(
                    provider.backChannel.deliveries.map(\.status) == [200, 400], "B took it; the replay was refused")
                // A second, stretched as every wait is under the sanitizer.
                let limit = TestTiming.scaled(.seconds(1))
                #expect(try await Self.signedOut(at: fleet.a, cookie: cookie, within: limit) < limit)
                try await browser.navigate(to: fleet.a.absoluteString)
                #expect(try await browser.text().contains("Signed out."))
                #expect(
                    !(try await WebFleetTests.isActive(
                        refreshToken, at: provider.issuer, clientID: "web-app", secret: "web-app-secret")))
            }
        }
    }

    @Test("Glewlwyd's login page; the session ended through Glewlwyd's session API reaches B")
    func glewlwyd() async throws {
        // Alone with Glewlwyd: other tests sign alice out everywhere there, which would end the
        // browser's session in the middle of its sign-in.
        try await AsyncGate.glewlwyd.run { try await Self.glewlwydFlow() }
    }

    static func glewlwydFlow() async throws {
        let environment = try #require(
            try Self.glewlwydEnvironment(), "Glewlwyd is not running: start it with scripts/providers/glewlwyd start")
        let issuerText = try #require(environment["issuer"] as? String)
        let issuer = try #require(URL(string: issuerText))
        let ports = try #require(environment["web_ports"] as? [Int], "restart Glewlwyd with the current script")
        let clientID = try #require(environment["web_client_id"] as? String)
        let secret = try #require(environment["web_client_secret"] as? String)
        try await WebFleetTests.withFleet({
            try await WebFleetTests.Fleet.start(
                issuer: issuer, clientID: clientID, secret: secret, ports: (ports[0], ports[1]))
        }) { fleet in
            try await withBrowser(fleet) { browser in
                try await browser.navigate(to: fleet.a.appendingPathComponent("protected").absoluteString)
                try await browser.type("alice", into: "#username")
                try await browser.type("alice-password", into: "#password")
                try await browser.click("#loginbut")
                try await browser.click("button[title='Continue to client application']")
                _ = try await browser.element("#api")
                #expect(try await browser.text().contains("The API says you are alice"))
                let cookies = try await browser.cookies()
                let cookie = try #require(cookies["latchkey-session"])
                let refreshToken = try await fleet.onlyRefreshToken()
                let sid = try await PostgresServer.withStore(key: fleet.key, url: fleet.url) { _, storage, _ in
                    try #require(
                        try await storage.webSessions(
                            issuer: issuer.absoluteString, providerSessionID: nil, subject: nil
                        )
                        .first?.providerSessionID, "Glewlwyd's ID token has no sid")
                }
                // As the user's browser would: Glewlwyd's session API, with its session cookie.
                var request = HTTPClientRequest(url: issuer.appendingPathComponent("session/\(sid)").absoluteString)
                request.method = .DELETE
                request.headers.add(
                    name: "Cookie", value: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
                let answer = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                #expect(answer.status.code == 200)
                // Glewlwyd answers before it sends the token, from a thread of its own.
                let took = try await signedOut(at: fleet.a, cookie: cookie, within: TestTiming.scaled(.seconds(5)))
                #expect(took < TestTiming.scaled(.seconds(5)), "A still serves the session")
                print("Glewlwyd's logout token signed the browser out on instance A within \(took) of the DELETE")
                try await browser.navigate(to: fleet.a.absoluteString)
                #expect(try await browser.text().contains("Signed out."))
                #expect(
                    !(try await WebFleetTests.isActive(refreshToken, at: issuer, clientID: clientID, secret: secret)))
            }
        }
    }

    /// `scripts/providers/glewlwyd start`'s settings, when it runs.
    static func glewlwydEnvironment() throws -> [String: Any]? {
        let path =
            ProcessInfo.processInfo.environment["LATCHKEY_GLEWLWYD_ENV"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".providers/glewlwyd/env.json").path
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }
}
