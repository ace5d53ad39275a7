import Foundation
import HTTPTypes
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// A token goes only to a resource whose metadata (RFC 9728) names the account's provider, one
/// the user paired with it, or the provider's own origin: `api`, `proof` and `token --resource`
/// refuse any other before a token is asked for, on the store's machine and through an agent
/// alike.
@Suite("A token goes only where its issuer is trusted")
struct CLIResourceTrustTests: DevProviderCLITest {
    /// The commands that would hand a token to (or for) `url`.
    static func commands(_ url: String) -> [[String]] {
        [["api", url], ["proof", "GET", url], ["token", "--resource", url]]
    }

    /// Runs `command` on `device`'s store and through `socket` with an empty home: both answers.
    func bothWays(_ command: [String], on device: Device, socket: String) async throws -> [CLI.Run] {
        let empty = try Device()
        defer { empty.cleanUp() }
        return [
            try await device.run(arguments: command),
            try await empty.run(arguments: command, environment: ["LATCHKEY_AGENT_SOCK": socket]),
        ]
    }

    @Test("a server naming another authorization server, or none, is sent and shown no token, either way")
    func untrusted() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await TestAgent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            for servers in [["https://attacker.example/"], []] {
                let server = try await ScriptedMCPServer.start(authorizationServers: servers)
                for command in Self.commands(server.endpoint.absoluteString) {
                    for run in try await bothWays(command, on: a, socket: agent.socket) {
                        #expect(run.status == 1, "\(command): \(run.stderr)")
                        #expect(run.stdout.isEmpty, "\(command): nothing printed: \(run.stdout)")
                        #expect(run.stderr.contains("did not issue tokens for it"), "\(command): \(run.stderr)")
                        #expect(run.stderr.contains("latchkey login --resource"), "\(command): \(run.stderr)")
                    }
                }
                #expect(
                    server.seen.withLockedValue { $0 }.allSatisfy { $0.headers[.authorization] == nil },
                    "no request carried a token")
                await server.stop()
            }
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test("a server naming the provider, or under a resource the user paired with it, gets the token, either way")
    func trusted() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            let named = try await ScriptedMCPServer.start(authorizationServers: [dev.issuer.absoluteString])
            let unnamed = try await ScriptedMCPServer.start(authorizationServers: [])
            // The user pairs the provider with the unnamed server's origin: its paths are covered.
            #expect(try await a.run("provider", "remove", "dev").status == 0)
            let origin = "http://127.0.0.1:\(unnamed.endpoint.port ?? 0)/"
            let added = try await a.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli", "--resource", origin)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try await login(a, "alice").status == 0)
            let agent = try await TestAgent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            for server in [named, unnamed] {
                let url = server.endpoint.absoluteString
                let ping = #"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
                for command in [["api", "-d", ping, url], ["token", "--resource", url]] {
                    let runs = try await bothWays(command, on: a, socket: agent.socket)
                    for (way, run) in zip(["store", "agent"], runs) {
                        #expect(run.status == 0, "\(command), \(way): \(run.stderr)")
                    }
                }
                #expect(server.seen.withLockedValue { $0 }.contains { $0.headers[.authorization] != nil })
                await server.stop()
            }
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test(
        "the sign-in a refusal names, run in a shell as printed, signs in at the resource's own server, and the request then goes"
    )
    func namedSignInRuns() async throws {
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            var configuration = DevProviderConfiguration.default
            configuration.protectedResources = [.init(path: "/mcp")]
            let other = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
            let resource = other.issuer.appendingPathComponent("mcp").absoluteString
            let refused = try await a.run("api", resource)
            #expect(refused.status == 1)
            // The command between the backquotes, as a user (or an agent) would copy it.
            let hint = try #require(
                refused.stderr.range(of: "`latchkey login ").map { refused.stderr[$0.lowerBound...].dropFirst() },
                "\(refused.stderr)")
            let command = String(hint.prefix { $0 != "`" }.dropFirst("latchkey ".count))
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let browser = try RecordingBrowser(in: folder)
            let login = try await CLI.startInShell(command, home: a.path, environment: ["BROWSER": browser.command])
            let first = try await login.standardOutput { $0.contains("\n") }
            let prompt = try #require(try CLILoginTests.documents(first).first ?? nil)
            let url = try #require((prompt["url"] as? String).flatMap(URLComponents.init(string:)), "\(first)")
            _ = try await CLILoginTests.playBrowser(at: url, dev: other, username: "bob", password: "bob-password")
            let finished = try await login.finish()
            #expect(finished.status == 0, "\(finished.stderr)")
            let providers = try await a.run("provider", "list", "--json")
            #expect(providers.array.contains { $0["issuer"] as? String == other.issuer.absoluteString })
            // The new account, at the resource's server (the default stays alice's).
            let account = try #require(try CLILoginTests.documents(finished.stdout).last??["id"] as? String)
            let sent = try await a.run("api", "--account", account, resource)
            #expect(sent.status == 0, "\(sent.stderr)")
            await other.stop()
        }
    }
}
