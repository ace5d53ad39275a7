import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey mcp-proxy URL` between a real MCP client and a real OAuth-protected MCP server, both
/// of the Python `mcp` SDK, with the development provider as the authorization server.
@Suite(
    "latchkey mcp-proxy with the Python MCP SDK's client and server",
    .enabled(if: providersRequired || PythonMCPServer.isAvailable))
struct CLIMCPProxyTests {
    /// A development provider on a clock the test moves, an MCP server whose tokens it issues,
    /// and a device signed in for that server from its URL alone.
    struct Setup {
        let clock: TestClock
        let dev: DevProvider
        let server: PythonMCPServer
        let device: Device

        static func start(requiring scopes: [String] = [], loginScope: String? = nil, jsonResponse: Bool = false)
            async throws -> Setup
        {
            let clock = TestClock()
            var configuration = DevProviderConfiguration.default
            // The provider offers the scopes the server needs (a resource of its own names them).
            if !scopes.isEmpty { configuration.protectedResources = [.init(path: "/files", scopes: scopes)] }
            let dev = try await DevProvider.start(
                configuration: configuration, signingKeys: SharedSigningKeys.get(), now: { clock.date })
            let server = try await PythonMCPServer.start(
                issuer: dev.issuer, client: "latchkey-confidential", secret: "latchkey-confidential-secret",
                requiring: scopes, jsonResponse: jsonResponse)
            let device = try Device()
            var login = [
                "login", "--resource", server.endpoint.absoluteString, "--username", "alice", "--password-stdin",
            ]
            if let loginScope { login += ["--scope", loginScope] }
            let signedIn = try await device.run(arguments: login, input: "alice-password")
            #expect(signedIn.status == 0, "\(signedIn.stderr)")
            return Setup(clock: clock, dev: dev, server: server, device: device)
        }

        func stop() async {
            await server.stop()
            await dev.stop()
            device.cleanUp()
        }
    }

    @Test(
        "a real MCP client lists and calls the tools of a protected server through the proxy",
        arguments: [false, true])
    func listsAndCalls(jsonResponse: Bool) async throws {
        // The server answers each POST with an event stream, or (jsonResponse) with one JSON body.
        let setup = try await Setup.start(jsonResponse: jsonResponse)
        // The proxy logs at trace level to the client's standard error: neither a token nor a
        // message's content may be in it.
        let report = try await PythonMCPClient.run(
            device: setup.device, endpoint: setup.server.endpoint, calls: 3, text: "secret-text",
            environment: ["LATCHKEY_LOG": "trace"])
        #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr)")
        #expect(report.tools == ["count", "echo", "whoami"])
        #expect(report.answers == ["secret-text-0", "secret-text-1", "secret-text-2"])
        #expect(report.whoami?.isEmpty == false, "the server saw alice's token")
        #expect(report.status == 0)
        #expect(report.stderr.contains("forwarding a message"), "the proxy's log is there")
        #expect(!report.stderr.contains("eyJ"), "no token in the log")
        #expect(!report.stderr.contains("secret-text"), "no message content in the log")
        await setup.stop()
    }

    @Test("through an agent, on a machine with no store: the same client, tools and answers, the agent's token")
    func throughAgent() async throws {
        let setup = try await Setup.start()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let agent = try await TestAgent.start(on: setup.device, ["--foreground"], socket: folder.file("agent.sock"))
        let empty = try Device()
        defer { empty.cleanUp() }
        let report = try await PythonMCPClient.run(
            device: empty, endpoint: setup.server.endpoint, calls: 2, text: "remote",
            environment: ["LATCHKEY_AGENT_SOCK": agent.socket])
        #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr)")
        #expect(report.tools == ["count", "echo", "whoami"])
        #expect(report.answers == ["remote-0", "remote-1"])
        #expect(report.whoami?.isEmpty == false, "the server saw alice's token")
        let log = try String(contentsOfFile: setup.device.path + "/agent.log", encoding: .utf8)
        #expect(log.contains("authorize"), "each request's header came from the agent: \(log)")
        agent.process.send(signal: SIGTERM)
        _ = try await agent.process.finish()
        await setup.stop()
    }

    @Test(
        "20 proxies call tools across 3 expiries: every call succeeds, one refresh per expiry, the rotating grant lives"
    )
    func twentyProxiesAcrossExpiries() async throws {
        try await AsyncGate.fanOut.run { try await twentyProxies() }
    }

    private func twentyProxies() async throws {
        let setup = try await Setup.start()
        let dev = setup.dev
        let clients = 20
        let calls = 12
        let phase = 3
        // Each client waits at every third call for the others: the provider's clock moves past
        // the access tokens' lifetime between calls, never while one is on its way (a token
        // refreshed for a call may not expire before its retry), and all twenty proxies meet
        // each expiry at once.
        let gate = try TemporaryFolder()
        defer { gate.cleanUp() }
        var running: [ChildProcess] = []
        for index in 0..<clients {
            running.append(
                try await PythonMCPClient.start(
                    device: setup.device, endpoint: setup.server.endpoint, calls: calls, pause: 0.01,
                    text: "client\(index)", gate: (gate.path, phase)))
        }
        let gates = stride(from: 0, to: calls, by: phase)
        func open(_ start: Int) { _ = FileManager.default.createFile(atPath: gate.file("go-\(start)"), contents: nil) }
        // A client that stopped early must not keep the others waiting after a failure.
        defer { gates.forEach(open) }
        for start in gates {
            var waited = 0
            while (0..<clients).contains(where: { gate.progress(of: "client\($0)") != start }) {
                waited += 1
                try #require(waited < 6_000, "every client reaches call \(start) within two minutes")
                try await Task.sleep(for: .milliseconds(20))
            }
            if start > 0 {
                setup.clock.advance(by: .seconds(dev.configuration.accessTokenLifetime + 1))
            } else {
                // The proxies' first calls got the resource's own token: one exchange of the
                // refresh token for all of them.
                #expect(dev.faults.count("token.refresh_token") == 1)
                dev.faults.resetCounters()
            }
            open(start)
        }
        let total = clients * calls
        var answered = 0
        for (index, process) in running.enumerated() {
            let report = try await PythonMCPClient.report(of: process)
            #expect(report.errors.isEmpty, "client \(index): \(report.errors) \(report.stderr)")
            #expect(report.answers == (0..<calls).map { "client\(index)-\($0)" })
            answered += report.answers.count
        }
        #expect(answered == total)
        // One refresh per expiry, never one per process.
        #expect(dev.faults.count("token.refresh_token") == 3)
        #expect(await dev.liveGrants(of: "alice") == 1, "no refresh token was replayed: the grant lives")
        await setup.stop()
    }

    @Test("after a sign-out, a running proxy answers each call with an error that says to sign in, and exits")
    func signOutEndsTheProxies() async throws {
        let setup = try await Setup.start()
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint) {
            let signOut = try await setup.device.run("signout", "--yes")
            #expect(signOut.status == 0, "\(signOut.stderr)")
        }
        report.expectCallsFailed(naming: "latchkey login --resource \(setup.server.endpoint.absoluteString)")
        #expect(report.answers.count + report.errors.count == 31, "every call answered, the last whoami included")
        #expect(await setup.dev.liveGrants(of: "alice") == 0, "the sign-out ended the grant")
        await setup.stop()
    }

    @Test(
        "a grant revoked at the provider: every later call is answered with the login to run, after at most one refresh and two requests to the server until the proxy exits"
    )
    func revokedGrant() async throws {
        let setup = try await Setup.start()
        var (requests, refreshes) = (0, 0)
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint) {
            // Each request the server gets with a token is one introspection at the provider.
            (requests, refreshes) = (setup.dev.faults.count("introspection"), setup.dev.faults.count(.token))
            #expect(await setup.dev.endSessions(of: "alice") >= 1, "an administrator ended alice's grant")
        }
        report.expectCallsFailed(naming: "latchkey login --resource \(setup.server.endpoint.absoluteString)")
        #expect(setup.dev.faults.count(.token) - refreshes <= 1, "one refresh attempt at most")
        #expect(
            setup.dev.faults.count("introspection") - requests <= 2,
            "at most two requests to the server, the proxy's exit included: \(setup.dev.faults.count("introspection") - requests)"
        )
        await setup.stop()
    }

    @Test("a server that needs a scope the token lacks: the call's error names it and the login to run")
    func insufficientScope() async throws {
        let setup = try await Setup.start(requiring: ["files:write"], loginScope: "openid offline_access")
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint, calls: 0)
        #expect(report.tools.isEmpty)
        let error = try #require(report.errors.first ?? report.stderr.split(separator: "\n").last.map(String.init))
        #expect(error.contains("files:write") || report.stderr.contains("files:write"), "\(report.stderr)")
        #expect(report.stderr.contains("latchkey login --resource \(setup.server.endpoint.absoluteString)"))
        await setup.stop()
    }
}
