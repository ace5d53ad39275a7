import AsyncHTTPClient
import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `login --device` with a configured provider at Glewlwyd, whose device grant
/// (`scripts/providers/glewlwyd` turns it on) is approved the way its own page does it: a signed-in
/// session opens the verification URL.
@Suite(
    "latchkey login --device against Glewlwyd",
    .enabled(if: providersRequired || providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV") != nil))
struct CLIGlewlwydDeviceTests {
    static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// Signs alice in at Glewlwyd's login API and opens `verification` (the prompt's complete
    /// URL) in that session, as her browser would.
    static func approve(_ verification: String, loginAPI: String) async throws {
        var login = HTTPClientRequest(url: loginAPI)
        login.method = .POST
        login.headers.add(name: "Content-Type", value: "application/json")
        login.body = .bytes(ByteBuffer(string: #"{"username":"alice","password":"alice-password"}"#))
        let loggedIn = try await client.execute(login, timeout: .seconds(10))
        let cookie = try #require(loggedIn.headers.first(name: "Set-Cookie")?.split(separator: ";").first)
        var open = HTTPClientRequest(url: verification + "&g_continue")
        open.headers.add(name: "Cookie", value: String(cookie))
        let opened = try await client.execute(open, timeout: .seconds(10))
        let location = try #require(opened.headers.first(name: "Location"))
        #expect(location.contains("prompt=deviceComplete"), "Glewlwyd did not approve the code: \(location)")
    }

    @Test("login --device --json at a configured Glewlwyd: the prompt first, the code approved, a token that works")
    func deviceSignIn() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try #require(
                providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
            let issuer = try #require(environment["issuer"] as? String)
            let loginAPI = try #require(environment["login_api"] as? String)
            let device = try Device()
            defer { device.cleanUp() }
            let added = try await device.run(
                "provider", "add", "glewlwyd", "--issuer", issuer, "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")

            let login = try await CLI.start([
                "--home", device.path, "--json", "login", "--provider", "glewlwyd", "--device",
            ])
            let first = try await login.standardOutput { $0.contains("\n") }
            let prompt = try #require(try CLILoginTests.documents(first).first ?? nil)
            #expect(prompt["action"] as? String == "enter_code")
            #expect(prompt["verification_uri"] as? String == issuer + "/device")
            let verification = try #require(prompt["verification_uri_complete"] as? String)
            try await Self.approve(verification, loginAPI: loginAPI)
            let finished = try await login.finish()
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(try CLILoginTests.documents(finished.stdout).last??["account"] as? String == "alice")
            #expect(!finished.stdout.contains("eyJ"), "no token in what the command prints")
            let userinfo = try await device.run("userinfo")
            #expect(userinfo.status == 0, "\(userinfo.stderr)")
        }
    }
}
