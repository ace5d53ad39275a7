import Foundation
import LatchkeyTestSupport
import Testing

/// Sign-in from an MCP server's URL alone, with no browser and no port, and many `mcp-proxy`
/// processes sharing one credential, against nanoidp: a real provider that registers clients
/// (RFC 7591), runs the device grant (RFC 8628) and rotates refresh tokens, revoking the whole
/// family when one is used twice. The MCP server is the Python SDK's, its tokens introspected at
/// nanoidp; each test has a provider of its own, whose clock it moves.
@Suite(
    "latchkey against nanoidp and the Python MCP SDK",
    .enabled(if: providersRequired || (NanoIDP.isAvailable && PythonMCPServer.isAvailable)))
struct CLINanoIDPTests {
    struct Setup {
        let nano: NanoIDP
        let server: PythonMCPServer
        let device: Device
        var resource: String { server.endpoint.absoluteString }

        static func start(
            accessTokenMinutes: Int = 1, refreshTokenMinutes: Int = 10080, documents: NanoIDP.DocumentHost? = nil
        ) async throws -> Setup {
            let nano = try await NanoIDP.start(
                accessTokenMinutes: accessTokenMinutes, refreshTokenMinutes: refreshTokenMinutes, documents: documents)
            let server = try await PythonMCPServer.start(
                issuer: nano.issuer, client: "resource-server", secret: "resource-server-secret")
            return Setup(nano: nano, server: server, device: try Device())
        }

        /// `latchkey --json login --resource URL --browser --paste` (with `options`), nanoidp's
        /// sign-in played as the user's browser would, and the redirect's address, changed by
        /// `edit`, pasted.
        func pasteSignIn(_ options: [String] = [], edit: (String) -> String = { $0 }) async throws
            -> ChildProcess.Result
        {
            let login = try await ChildProcess.start(
                CLI.binary,
                ["--home", device.path, "--json", "login", "--resource", resource, "--browser", "--paste"] + options,
                environment: CLI.environment(), input: nil)
            let first = try await login.standardOutput { $0.contains("\n") }
            let prompt = try #require(try CLILoginTests.documents(first).first ?? nil)
            #expect(prompt["action"] as? String == "open")
            let url = try #require(prompt["url"] as? String)
            #expect(url.hasPrefix(nano.issuer.absoluteString + "/authorize?"))
            let location = try await nano.signIn(at: url)
            #expect(location.hasPrefix("http://127.0.0.1/callback?"), "no port: nothing listens")
            login.write(edit(location) + "\n")
            return try await login.finish()
        }

        /// Starts `latchkey --json login --resource URL --device` and returns it with its prompt,
        /// the JSON line it prints before it waits.
        func startDeviceLogin() async throws -> (ChildProcess, [String: Any]) {
            let login = try await CLI.start([
                "--home", device.path, "--json", "login", "--resource", resource, "--device",
            ])
            let first = try await login.standardOutput { $0.contains("\n") }
            return (login, try #require(try CLILoginTests.documents(first).first ?? nil, "\(first)"))
        }

        func stop() async {
            await server.stop()
            await nano.stop()
            device.cleanUp()
        }
    }

    @Test(
        "login --resource URL --device with nothing configured: a client registered for the device grant, the code entered at nanoidp's form, no port bound"
    )
    func deviceFromURL() async throws {
        let setup = try await Setup.start()
        // The prompt is one JSON line on standard output, before the command waits.
        let (login, prompt) = try await setup.startDeviceLogin()
        #expect(prompt["action"] as? String == "enter_code")
        #expect(prompt["verification_uri"] as? String == setup.nano.issuer.absoluteString + "/device")
        let code = try #require(prompt["user_code"] as? String)
        #expect((prompt["verification_uri_complete"] as? String)?.hasSuffix(code) == true)
        try await setup.nano.approveDevice(code: code)
        let finished = try await login.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try CLILoginTests.documents(finished.stdout).last??["account"] as? String == "alice")

        // The client was registered with the device grant beside the code flow's.
        let registered = try #require(try await setup.nano.audit().first { $0.event == "client_registered" })
        let grants = registered.details["grant_types"] as? [String] ?? []
        #expect(grants.contains("urn:ietf:params:oauth:grant-type:device_code"), "\(grants)")
        #expect(grants.contains("authorization_code") && grants.contains("refresh_token"), "\(grants)")
        #expect(try await setup.nano.tokenRequests("urn:ietf:params:oauth:grant-type:device_code") == 1)

        // And the token is the one the MCP server sees, through the proxy.
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint, calls: 1)
        #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr)")
        #expect(report.whoami == "alice")
        await setup.stop()
    }

    @Test(
        "a device code the provider says expired (expired_token) ends login with exit 1 and a message, not a hang; nothing signed in"
    )
    func deviceCodeExpires() async throws {
        let setup = try await Setup.start()
        // The code was issued (its prompt is out); then, at the provider only, its ten minutes pass.
        let (login, _) = try await setup.startDeviceLogin()
        try setup.nano.shiftClock(to: 11 * 60)
        let finished = try await login.finish()
        #expect(finished.status == 1, "\(finished.stderr)")
        #expect(finished.stderr.contains("expired_token"), "the provider's answer, named: \(finished.stderr)")
        #expect(try await setup.device.run("token", "--resource", setup.resource).status != 0, "nothing signed in")
        await setup.stop()
    }

    @Test("login --resource URL --browser --paste: the pasted redirect is redeemed, with no port bound")
    func pasted() async throws {
        let setup = try await Setup.start()
        let finished = try await setup.pasteSignIn()
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try CLILoginTests.documents(finished.stdout).last??["account"] as? String == "alice")
        #expect(try await setup.nano.tokenRequests("authorization_code") == 1)
        let token = try await setup.device.run("token", "--resource", setup.resource)
        #expect(token.status == 0, "\(token.stderr)")
        await setup.stop()
    }

    @Test(
        "a pasted redirect with a changed state or another issuer's iss is refused with a message: no token request, nothing stored",
        arguments: ["state", "iss"])
    func pasteRefused(changing parameter: String) async throws {
        let setup = try await Setup.start()
        let finished = try await setup.pasteSignIn { location in
            parameter == "state"
                ? location.replacingOccurrences(of: "state=", with: "state=changed")
                : location + "&iss=https%3A%2F%2Fissuer.example"
        }
        #expect(finished.status != 0)
        let expected = parameter == "state" ? "state" : "issuer"
        #expect(finished.stderr.contains(expected), "\(finished.stderr)")
        #expect(try await setup.nano.tokenRequests("authorization_code", status: "success") == 0)
        #expect(try await setup.nano.audit().filter { $0.event == "token_request" }.isEmpty, "no token request")
        let token = try await setup.device.run("token", "--resource", setup.resource)
        #expect(token.status != 0, "nothing was signed in")
        await setup.stop()
    }
}
