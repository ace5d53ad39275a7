import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey login --browser` in a real browser: headless Chromium, driven over WebDriver, signs
/// in on the provider's own login page and lands on the CLI's loopback page.
@Suite("latchkey login in Chromium", .serialized, .enabled(if: providersRequired || WebDriver.isAvailable))
struct CLIBrowserTests {
    @Test("the development provider's login page, in Chromium, to the CLI's page")
    func devProvider() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let added = try await device.run(
            "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli")
        #expect(added.status == 0, "\(added.stderr)")
        try await Self.signIn(on: device, name: "dev-provider", extra: []) { browser in
            try await Self.signInAsAlice(browser)
        }
        let accounts = try await device.run("--json", "accounts")
        #expect((accounts.array.first?["username"] as? String) == "alice")
        await dev.stop()
    }

    @Test("api --login on a server never seen: it signs in for the server in the browser, then answers with its body")
    func apiLogin() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp")]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let resource = dev.issuer.appendingPathComponent("mcp").absoluteString
        let answered = try await Self.signIn(
            on: device, name: "api-login", extra: [], command: ["api", "--login", resource]
        ) { browser in try await Self.signInAsAlice(browser) }
        #expect(answered.stdout.contains(#""username":"alice""#), "standard output is the answer: \(answered.stdout)")
        #expect(!answered.stdout.contains("Signed in"))
        #expect(answered.stderr.contains("Signed in as"), "\(answered.stderr)")
        #expect(answered.stderr.contains("is served by \(dev.issuer.absoluteString)"))
        await dev.stop()
    }

    @Test("api --login at a server that needs a scope the grant lacks: signed in for it, then answered")
    func apiLoginStepsUp() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/files", scopes: ["files:write"])]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let resource = dev.issuer.appendingPathComponent("files").absoluteString
        let narrow = try await device.run(
            arguments: [
                "login", "--resource", resource, "--username", "alice", "--password-stdin", "--scope",
                "openid offline_access",
            ], input: "alice-password")
        #expect(narrow.status == 0, "\(narrow.stderr)")
        let refused = try await device.run("api", resource)
        #expect(refused.status == 1 && refused.stderr.contains("files:write"), "\(refused.stderr)")
        let answered = try await Self.signIn(
            on: device, name: "api-login-step-up", extra: [], command: ["api", "--login", resource]
        ) { browser in try await Self.signInAsAlice(browser) }
        #expect(answered.status == 0, "\(answered.stderr)")
        #expect(answered.stderr.contains("needs openid offline_access files:write"), "\(answered.stderr)")
        #expect(answered.stdout.contains(#""username":"alice""#), "\(answered.stdout)")
        let accounts = try await device.run("--json", "accounts")
        #expect(accounts.array.count == 1, "the account's grant widened; no second account")
        await dev.stop()
    }

    @Test("Glewlwyd's login web app, in Chromium, to the CLI's page")
    func glewlwyd() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try #require(
                providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
            let issuer = try #require(environment["issuer"] as? String)
            #expect(environment["login_page"] != nil, "restart Glewlwyd with the current script")
            let device = try Device()
            defer { device.cleanUp() }
            let added = try await device.run(
                "provider", "add", "glewlwyd", "--issuer", issuer, "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
            // Glewlwyd matches redirect URIs exactly: the test client registers port 8765.
            try await Self.signIn(on: device, name: "glewlwyd", extra: ["--redirect-port", "8765"]) { browser in
                try await browser.type("alice", into: "#username")
                try await browser.type("alice-password", into: "#password")
                try await browser.click("#loginbut")
                // Signed in, Glewlwyd asks where to go: on to the application.
                try await browser.click("button[title='Continue to client application']")
            }
            let accounts = try await device.run("--json", "accounts")
            #expect((accounts.array.first?["email"] as? String) == "alice@example.com")
        }
    }

    @Test(
        "login --resource through Glewlwyd's login page: the grant keeps it, token --resource gets its token; a password sign-in's grant keeps none, and says so"
    )
    func glewlwydResources() async throws {
        try await AsyncGate.glewlwyd.run {
            let issuer = try Self.glewlwydIssuer()
            let files = "https://files.latchkey.test/"
            let device = try Device()
            defer { device.cleanUp() }
            let added = try await device.run(
                arguments: [
                    "provider", "add", "glewlwyd", "--issuer", issuer, "--client-id", "latchkey-confidential",
                    "--client-secret-stdin", "--auth-method", "basic", "--allow-password-grant",
                ],
                input: "latchkey-confidential-secret")
            #expect(added.status == 0, "\(added.stderr)")
            try await Self.signIn(
                on: device, name: "glewlwyd-resource",
                extra: [
                    "--redirect-port", "8765", "--resource", files, "--scope", "openid profile email offline_access",
                ]
            ) { browser in try await Self.signInAsAliceOnGlewlwyd(browser) }
            let status = try await device.run("--json", "status")
            let row = try #require((status.object["accounts"] as? [[String: Any]])?.first)
            #expect(row["resources"] as? [String] == [files], "\(status.stdout)")
            let token = try await device.run("token", "--resource", files, "--format", "json")
            #expect(token.status == 0, "\(token.stderr)")
            #expect(token.object["resource"] as? String == files)
            #expect(token.object["grantResources"] as? [String] == [files])
            // A resource the grant was not asked for, that cannot say whose tokens it takes:
            // refused before any token is asked for, with what to run.
            let other = try await device.run("token", "--resource", "https://mail.latchkey.test/")
            #expect(other.status == 5, "\(other.stderr)")
            #expect(other.stderr.contains("latchkey login --resource https://mail.latchkey.test/"), "\(other.stderr)")

            // Glewlwyd's password grant keeps no resource, even when one is named.
            let password = try await device.run(
                arguments: ["login", "--username", "bob", "--password-stdin", "--resource", files],
                input: "bob-password")
            #expect(password.status == 0, "\(password.stderr)")
            let refused = try await device.run("token", "bob", "--resource", files)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("password sign-in"), "\(refused.stderr)")
        }
    }

    @Test(
        "mcp-proxy with Glewlwyd as the MCP server's authorization server: signed in for the server on Glewlwyd's page, a real MCP client calls its tools"
    )
    func glewlwydMCPProxy() async throws {
        try await AsyncGate.glewlwyd.run {
            let issuer = try #require(URL(string: try Self.glewlwydIssuer()))
            // Glewlwyd issues tokens for the resources it knows: the server listens where it says.
            let server = try await PythonMCPServer.start(
                issuer: issuer, client: "latchkey-confidential", secret: "latchkey-confidential-secret", port: 8773)
            let device = try Device()
            defer { device.cleanUp() }
            let added = try await device.run(
                arguments: [
                    "provider", "add", "glewlwyd", "--issuer", issuer.absoluteString, "--client-id",
                    "latchkey-confidential", "--client-secret-stdin", "--auth-method", "basic",
                ],
                input: "latchkey-confidential-secret")
            #expect(added.status == 0, "\(added.stderr)")
            let endpoint = server.endpoint.absoluteString
            try await Self.signIn(
                on: device, name: "glewlwyd-mcp",
                extra: [
                    "--redirect-port", "8765", "--resource", endpoint, "--scope", "openid profile email offline_access",
                ]
            ) { browser in try await Self.signInAsAliceOnGlewlwyd(browser) }
            let report = try await PythonMCPClient.run(device: device, endpoint: server.endpoint, calls: 3)
            #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr)")
            #expect(report.tools == ["count", "echo", "whoami"])
            #expect(report.answers == ["hello-0", "hello-1", "hello-2"])
            #expect(report.whoami?.isEmpty == false, "Glewlwyd's introspection named the token's subject")
            let token = try await device.run("token", "--resource", endpoint, "--format", "json")
            #expect(token.object["resource"] as? String == endpoint, "the proxy's token was the resource's")
            await server.stop()
        }
    }

    /// Signs alice in on the development provider's login page.
    static func signInAsAlice(_ browser: WebDriver.Session) async throws {
        try await browser.type("alice", into: "input[name=username]")
        try await browser.type("alice-password", into: "input[name=password]")
        try await browser.click("button[type=submit]")
    }

    /// The issuer of the Glewlwyd that `scripts/providers/glewlwyd` started.
    static func glewlwydIssuer() throws -> String {
        let environment = try #require(
            providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
        return try #require(environment["issuer"] as? String)
    }

    /// Signs alice in on Glewlwyd's login app, and lets the client go on.
    static func signInAsAliceOnGlewlwyd(_ browser: WebDriver.Session) async throws {
        try await browser.type("alice", into: "#username")
        try await browser.type("alice-password", into: "#password")
        try await browser.click("#loginbut")
        try await browser.click("button[title='Continue to client application']")
    }

    /// Runs `latchkey login --browser` with a `$BROWSER` that hands the URL over, opens it in
    /// Chromium, lets `fill` sign in on the provider's page, and checks the CLI's page and exit.
    /// `command` replaces `login --browser --timeout 120 EXTRA` for another command that signs in
    /// through the browser; what the command printed is returned.
    @discardableResult
    static func signIn(
        on device: Device, name: String, extra: [String], command: [String]? = nil,
        fill: (WebDriver.Session) async throws -> Void
    ) async throws -> ChildProcess.Result {
        let arguments = command ?? ["login", "--browser", "--timeout", "120"] + extra
        do {
            return try await signInOnce(on: device, name: name, arguments: arguments, fill: fill)
        } catch  where "\(error)".contains("Connection refused") {
            // chromedriver stopped listening (seen about once in ten runs of the whole suite on a
            // loaded two-core machine, never alone): the whole sign-in once more, from a new
            // login and a new chromedriver. A second failure fails the test.
            print("chromedriver refused the connection (\(error)); signing in once more")
            return try await signInOnce(on: device, name: name, arguments: arguments, fill: fill)
        }
    }

    private static func signInOnce(
        on device: Device, name: String, arguments: [String], fill: (WebDriver.Session) async throws -> Void
    ) async throws -> ChildProcess.Result {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let system = try RecordingBrowser(in: folder)
        let login = try await CLI.start(["--home", device.path] + arguments, environment: ["BROWSER": system.command])

        let driver = try await WebDriver.start()
        let browser: WebDriver.Session
        do {
            browser = try await driver.session()
        } catch {
            await driver.stop()
            login.send(signal: SIGTERM)
            throw error
        }
        do {
            let url = try await browser.waitFor("the CLI to open the browser", timeout: .seconds(30)) { system.url }
            try await browser.navigate(to: url)
            try await fill(browser)
            let landed = try await browser.waitFor("the CLI's page", timeout: .seconds(30)) {
                () async throws -> String? in
                let current = try await browser.currentURL()
                return current.hasPrefix("http://127.0.0.1:") && current.contains("/callback") ? current : nil
            }
            let text = try await browser.text()
            #expect(text.contains("Signed in. You can close this window."), "the page said: \(text.prefix(300))")
            try await Self.keep(try await browser.screenshot(), name: name)
            #expect(!landed.contains("error="))
        } catch {
            // What the browser showed when it went wrong.
            if let shot = try? await browser.screenshot() { try? await Self.keep(shot, name: "\(name)-failed") }
            await browser.close()
            await driver.stop()
            login.send(signal: SIGTERM)
            throw error
        }
        await browser.close()
        await driver.stop()
        let finished = try await login.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        return finished
    }

    /// Writes the screenshot beside the build and names it in the test log.
    static func keep(_ png: Data, name: String) async throws {
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("login-\(name).png")
        try png.write(to: file)
        print("screenshot of the final page (\(png.count) bytes): \(file.path)")
    }
}
