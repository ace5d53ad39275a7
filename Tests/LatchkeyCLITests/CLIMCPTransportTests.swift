import Foundation
import HTTPTypes
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// The transport's rarer cases through `latchkey mcp-proxy`, played on cue by a scripted
/// endpoint: the session's headers, a cut stream resumed, the server's own stream, the session
/// ended at exit, and a session the server no longer knows.
@Suite("latchkey mcp-proxy: Streamable HTTP's rarer cases")
struct CLIMCPTransportTests: DevProviderCLITest {
    func line(_ text: String) -> String { text + "\n" }

    /// A scripted server, alice signed in for it on `device`, and a proxy to it whose session
    /// `initialize` has started.
    func initializedProxy(on device: Device, issuer: URL) async throws -> (ScriptedMCPServer, ChildProcess) {
        let server = try await ScriptedMCPServer.start(authorizationServers: [issuer.absoluteString])
        let endpoint = server.endpoint.absoluteString
        #expect(try await login(device, "alice", "--resource", endpoint).status == 0)
        let proxy = try await ChildProcess.start(
            CLI.binary, ["--home", device.path, "mcp-proxy", endpoint], environment: CLI.environment())
        proxy.write(line(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#))
        _ = try await proxy.standardOutput { $0.contains(#""id":1"#) }
        return (server, proxy)
    }

    @Test("a server whose metadata names another authorization server, or none, is sent no token; a pairing allows it")
    func untrustedServer() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            for servers in [["https://attacker.example/"], []] {
                let server = try await ScriptedMCPServer.start(authorizationServers: servers)
                let proxy = try await ChildProcess.start(
                    CLI.binary, ["--home", a.path, "mcp-proxy", server.endpoint.absoluteString],
                    environment: CLI.environment())
                proxy.write(
                    line(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#))
                proxy.closeInput()
                let ended = try await proxy.finish()
                #expect(ended.status == 1, "\(servers): \(ended.stderr)")
                #expect(ended.stderr.contains("did not issue tokens for it"), "\(ended.stderr)")
                #expect(ended.stderr.contains("latchkey login --resource"), "\(ended.stderr)")
                #expect(
                    server.seen.withLockedValue { $0 }.allSatisfy { $0.headers[.authorization] == nil },
                    "no request carried a token")
                await server.stop()
            }
            // The user pairs the provider with the server on purpose: then it is sent tokens.
            let server = try await ScriptedMCPServer.start(authorizationServers: [])
            #expect(try await a.run("provider", "remove", "dev").status == 0)
            let added = try await a.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli", "--resource", server.endpoint.absoluteString)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try await login(a, "alice").status == 0)
            let proxy = try await ChildProcess.start(
                CLI.binary, ["--home", a.path, "mcp-proxy", server.endpoint.absoluteString],
                environment: CLI.environment())
            proxy.write(
                line(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#))
            _ = try await proxy.standardOutput { $0.contains(#""id":1"#) }
            proxy.closeInput()
            _ = try await proxy.finish()
            #expect(server.seen.withLockedValue { $0 }.contains { $0.headers[.authorization] != nil })
            await server.stop()
        }
    }

    @Test(
        "session id and protocol version on every request, a cut answer resumed, the server's own message, the session ended"
    )
    func session() async throws {
        try await withDevices { dev, a, _ in
            let (server, proxy) = try await initializedProxy(on: a, issuer: dev.issuer)
            proxy.write(line(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#))
            let unasked = try await proxy.standardOutput { $0.contains("unasked") }
            #expect(unasked.contains(#""method":"notifications/message""#), "the server's own stream was heard")
            proxy.write(line(#"{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{}}"#))
            let resumed = try await proxy.standardOutput { $0.contains("resumed") }
            #expect(resumed.contains(#""id":"call-7""#), "the cut answer came through the resumed stream")
            proxy.closeInput()
            let finished = try await proxy.finish()
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(finished.stdout.split(separator: "\n").count == 3, "one line per message: \(finished.stdout)")

            // The requests that carried a token: the proxy's own, after the check (a request
            // without one) of whose tokens the server takes.
            let seen = server.seen.withLockedValue { $0 }.filter { $0.headers[.authorization] != nil }
            let afterInitialize = seen.dropFirst()
            #expect(!afterInitialize.isEmpty)
            for request in afterInitialize {
                #expect(request.headers[ScriptedMCPServer.session] == ScriptedMCPServer.sessionID, "\(request.method)")
                #expect(
                    request.headers[ScriptedMCPServer.version] == ScriptedMCPServer.protocolVersion, "\(request.method)"
                )
            }
            #expect(
                seen.contains { $0.method == "GET" && $0.headers[ScriptedMCPServer.lastEventID] == #"call-"call-7""# })
            // (The listener's last GET, cancelled at exit, may still reach the server after it.)
            #expect(
                seen.contains { $0.method == "DELETE" && $0.headers[ScriptedMCPServer.session] != nil },
                "the session ended when the client closed its input")
            #expect(server.sessionEnded.withLockedValue { $0 })
            await server.stop()
        }
    }

    @Test("a session the server no longer knows: the request is answered with an error saying to start again")
    func sessionEnded() async throws {
        try await withDevices { dev, a, _ in
            let (server, proxy) = try await initializedProxy(on: a, issuer: dev.issuer)
            server.sessionEnded.withLockedValue { $0 = true }
            proxy.write(line(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#))
            let answered = try await proxy.standardOutput { $0.contains(#""id":2"#) }
            #expect(answered.contains(#""error""#))
            #expect(answered.contains("ended the MCP session"), "\(answered)")
            proxy.closeInput()
            #expect(try await proxy.finish().status == 0)
            await server.stop()
        }
    }
}
