import Foundation
import LatchkeyTestSupport
import Testing

/// Many `mcp-proxy` processes, each driven by the Python MCP SDK's stdio client, sharing one
/// credential at nanoidp, which rotates refresh tokens and revokes the whole family when one is
/// presented twice: one replayed refresh token would sign the user out everywhere.
@Suite(
    "latchkey mcp-proxy against nanoidp: one refresh for every process, and a grant that ends",
    .enabled(if: providersRequired || (NanoIDP.isAvailable && PythonMCPServer.isAvailable)))
struct CLINanoIDPRefreshTests {
    @Test(
        "20 proxies on a token the provider says expired: exactly one refresh, every call answered, and the family still valid two expiries later"
    )
    func twentyProxiesOneRefresh() async throws {
        // Access tokens of ten minutes: the test moves nanoidp's clock past each one's expiry,
        // while the proxies' own clock (the real one) still calls it valid. Every refresh is
        // then one the server's answer asked for, never one a slow machine's clock did.
        let setup = try await CLINanoIDPTests.Setup.start(accessTokenMinutes: 10)
        let signedIn = try await setup.pasteSignIn()
        #expect(signedIn.status == 0, "\(signedIn.stderr)")
        let refresh = "refresh_token"

        try setup.nano.shiftClock(to: 11 * 60)
        let reports = try await AsyncGate.fanOut.run {
            let clients = try await withThrowingTaskGroup { group in
                for index in 0..<20 {
                    group.addTask {
                        try await PythonMCPClient.start(
                            device: setup.device, endpoint: setup.server.endpoint, calls: 2, text: "p\(index)")
                    }
                }
                return try await group.reduce(into: [ChildProcess]()) { $0.append($1) }
            }
            var reports: [PythonMCPClient.Report] = []
            for client in clients { reports.append(try await PythonMCPClient.report(of: client)) }
            return reports
        }
        for report in reports {
            #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr.suffix(2000))")
            #expect(report.answers.count == 2 && report.whoami == "alice")
        }
        #expect(try await setup.nano.tokenRequests(refresh) == 1, "one refresh for twenty processes")
        #expect(try await setup.nano.tokenRequests(refresh, status: "failed") == 0, "no refresh token replayed")

        // Two expiries later the family still answers: nothing revoked it.
        for expiry in 2...3 {
            try setup.nano.shiftClock(to: expiry * 11 * 60)
            let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint, calls: 1)
            #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr.suffix(2000))")
            #expect(try await setup.nano.tokenRequests(refresh) == expiry)
        }
        #expect(try await setup.nano.tokenRequests(refresh, status: "failed") == 0)
        let token = try await setup.device.run("token", "--resource", setup.resource)
        #expect(token.status == 0, "still signed in: \(token.stderr)")
        await setup.stop()
    }

    @Test(
        "a refresh token presented twice revokes the family at nanoidp: the proxy's calls get the login to run, after one refresh attempt and at most two requests"
    )
    func grantRevokedOnReuse() async throws {
        let setup = try await CLINanoIDPTests.Setup.start(accessTokenMinutes: 10)
        let signedIn = try await setup.pasteSignIn()
        #expect(signedIn.status == 0, "\(signedIn.stderr)")
        // The first token for the server's resource (RFC 8707) is a refresh: done before the copy.
        let first = try await setup.device.run("token", "--resource", setup.resource)
        #expect(first.status == 0, "\(first.stderr)")
        // A copy of this home (a restored backup, a cloned disk) holds the same refresh token.
        let copy = try Device()
        defer { copy.cleanUp() }
        try FileManager.default.copyItem(atPath: setup.device.path, toPath: copy.path)
        var (requests, tokenRequests) = (0, 0)
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint) {
            // The copy refreshes first: the token this home holds is now a spent one, and the
            // access token this session uses has expired at the provider.
            let refreshed = try await copy.run("refresh")
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            try setup.nano.shiftClock(to: 11 * 60)
            requests = try await setup.nano.introspections()
            tokenRequests = try await setup.nano.audit().filter { $0.event == "token_request" }.count
        }
        report.expectCallsFailed(naming: "latchkey login --resource \(setup.resource)")
        let audit = try await setup.nano.audit().filter { $0.event == "token_request" }
        #expect(audit.count - tokenRequests <= 1, "one refresh attempt at most: \(audit.count - tokenRequests)")
        #expect(try await setup.nano.tokenRequests("refresh_token", status: "failed") == 1, "the spent token, refused")
        let sent = try await setup.nano.introspections() - requests
        #expect(sent <= 2, "at most two requests to the server, the proxy's exit included: \(sent)")
        // The provider revoked the whole family: the copy's newer token ends with it.
        let copyRefresh = try await copy.run("refresh")
        #expect(copyRefresh.status == 4, "\(copyRefresh.stderr)")
        await setup.stop()
    }

    @Test(
        "a grant that ends at the provider mid-session: every later call gets the login to run, after one refresh attempt and at most two requests"
    )
    func grantEnds() async throws {
        let setup = try await CLINanoIDPTests.Setup.start(accessTokenMinutes: 1, refreshTokenMinutes: 2)
        let signedIn = try await setup.pasteSignIn()
        #expect(signedIn.status == 0, "\(signedIn.stderr)")
        var (requests, tokenRequests) = (0, 0)
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint) {
            // Past both the access token's and the refresh token's lifetime: the grant is over.
            try setup.nano.shiftClock(to: 5 * 60)
            requests = try await setup.nano.introspections()
            tokenRequests = try await setup.nano.audit().filter { $0.event == "token_request" }.count
        }
        report.expectCallsFailed(naming: "latchkey login --resource \(setup.resource)")
        let refreshes = try await setup.nano.audit().filter { $0.event == "token_request" }.count - tokenRequests
        #expect(refreshes <= 1, "one refresh attempt at most: \(refreshes)")
        let sent = try await setup.nano.introspections() - requests
        #expect(sent <= 2, "at most two requests to the server, the proxy's exit included: \(sent)")

        // The command the error names, run in a shell as it is written, signs in again (the
        // test plays the browser), and the next session's calls go through.
        // (The provider's clock back with the real one: an ID token from the future is refused.)
        try setup.nano.shiftClock(to: 0)
        let error = try #require(report.errors.first)
        let hint = try #require(error.range(of: "`latchkey ").map { error[$0.upperBound...] }, "\(error)")
        let command = String(hint.prefix { $0 != "`" })
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let browser = try RecordingBrowser(in: folder)
        let login = try await CLI.startInShell(
            command, home: setup.device.path, environment: ["BROWSER": browser.command])
        let first = try await login.standardOutput { $0.contains("\n") }
        let url = try #require(try CLILoginTests.documents(first).first??["url"] as? String, "\(first)")
        try await setup.nano.playBrowser(at: url)
        let signedIn2 = try await login.finish()
        #expect(signedIn2.status == 0, "\(signedIn2.stderr)")
        let again = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint, calls: 1)
        #expect(again.errors.isEmpty, "\(again.errors) \(again.stderr.suffix(2000))")
        await setup.stop()
    }
}
