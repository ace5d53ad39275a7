import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `mcp-proxy` with an MCP host that shows URLs (URL-mode elicitation, MCP 2025-11-25): an
/// account whose grant ended signs in again through the host, by a device code whose page the
/// host is asked to open, and the waiting request is answered.
@Suite(
    "latchkey mcp-proxy signs in again through a host that shows URLs",
    .enabled(if: providersRequired || PythonMCPServer.isAvailable))
struct CLIMCPElicitationTests {
    /// The URL the client was asked to show, once it was.
    static func shownURL(in folder: TemporaryFolder) async throws -> URLComponents {
        for _ in 0..<600 {
            if let text = try? String(contentsOfFile: folder.file("url"), encoding: .utf8) {
                return try #require(URLComponents(string: text))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the client was never asked to show a page")
        throw CancellationError()
    }

    @Test(
        "a grant revoked mid-session: the host shows the device page with alice's hint, the code is approved, every call is answered"
    )
    func signsInThroughHost() async throws {
        let setup = try await CLIMCPProxyTests.Setup.start()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        var approval: Task<String, any Error>?
        let report = try await PythonMCPClient.run(
            device: setup.device, endpoint: setup.server.endpoint, pause: 0.05, elicit: (folder.path, "accept")
        ) {
            #expect(await setup.dev.endSessions(of: "alice") >= 1, "an administrator ended alice's grant")
            // The user opens the page the host shows, and approves the code on it. The host is
            // asked during the client's next call, after the gate opens: the user acts meanwhile.
            let dev = setup.dev
            approval = Task {
                let page = try await Self.shownURL(in: folder)
                #expect(page.path == dev.url(.deviceVerification).path)
                let code = try #require(page.queryItems?.first { $0.name == "user_code" }?.value)
                try await CLILoginTests.approve(code, at: dev)
                return code
            }
        }
        let code = try #require(try await approval?.value)
        #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr.suffix(3000))")
        #expect(report.answers.count == 30, "every call answered, the one that waited included")
        #expect(report.elicited.count == 1, "one sign-in, asked once: \(report.elicited)")
        #expect(report.elicited.first?["mode"] == "url")
        #expect(report.elicited.first?["message"]?.contains(code) == true)
        #expect(report.whoami?.isEmpty == false)
        #expect(!report.stderr.contains("eyJ"), "no token in the log")
        await setup.stop()
    }

    @Test("a host that declines: the waiting call, and every later one, gets the sign-in to run, and no code is polled")
    func declined() async throws {
        // The server needs the email scope: the provider says who alice is.
        let setup = try await CLIMCPProxyTests.Setup.start(requiring: ["email"])
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        var tokenRequests = 0
        // The calls go on for longer than the device code's polling interval (5 s): a code
        // polled for would reach the token endpoint meanwhile.
        let report = try await PythonMCPClient.run(
            device: setup.device, endpoint: setup.server.endpoint, pause: 0.25, elicit: (folder.path, "decline"),
            proxyArguments: ["--account", "alice@example.com"]
        ) {
            tokenRequests = setup.dev.faults.count(.token)
            #expect(await setup.dev.endSessions(of: "alice") >= 1)
        }
        #expect(report.elicited.count == 1, "asked once, not at every call: \(report.elicited.count)")
        // The account's own sign-in: who it is as the login hint.
        report.expectCallsFailed(
            naming: "latchkey login --resource \(setup.server.endpoint.absoluteString) --login-hint alice@example.com")
        #expect(
            setup.dev.faults.count(.token) - tokenRequests <= 1, "a refresh attempt at most, and no device code polled")
        await setup.stop()
    }
}
