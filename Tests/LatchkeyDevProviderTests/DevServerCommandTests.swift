import AsyncHTTPClient
import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `latchkey dev-server`, run as the built binary.
@Suite("latchkey dev-server")
struct DevServerCommandTests {
    @Test("prints the issuer URL as its first line, serves discovery, and exits 0 on SIGINT")
    func standalone() async throws {
        let server = try await ChildProcess.start(Executables.latchkey, ["dev-server", "--port", "0"], input: "")
        let output = try await server.standardOutput { $0.contains("admin token: ") && $0.hasSuffix("\n") }
        let lines = output.split(separator: "\n").map(String.init)
        let firstLine = try #require(lines.first)
        #expect(firstLine.hasPrefix("http://127.0.0.1:"))
        #expect(lines.dropFirst().first?.hasPrefix("admin token: ") == true)
        let discovery = try await Client.fetchJSON(firstLine + "/.well-known/openid-configuration")
        #expect(discovery["issuer"] as? String == firstLine)

        server.send(signal: SIGINT)
        #expect(try await server.finish().status == 0)
    }

    @Test("--resource serves a protected resource that challenges with its metadata's URL and the scope it needs")
    func resource() async throws {
        let server = try await ChildProcess.start(
            Executables.latchkey, ["dev-server", "--port", "0", "--resource", "/mcp:files:read"], input: "")
        let output = try await server.standardOutput { $0.contains("admin token: ") && $0.hasSuffix("\n") }
        let issuer = try #require(output.split(separator: "\n").first.map(String.init))
        let response = try await http.execute(HTTPClientRequest(url: issuer + "/mcp"), timeout: .seconds(10))
        #expect(response.status == .unauthorized)
        #expect(
            response.headers["WWW-Authenticate"].first
                == #"Bearer resource_metadata="\#(issuer)/.well-known/oauth-protected-resource/mcp", scope="files:read""#
        )
        let metadata = try await Client.fetchJSON(issuer + "/.well-known/oauth-protected-resource/mcp")
        #expect(metadata["resource"] as? String == issuer + "/mcp")
        #expect(metadata["authorization_servers"] as? [String] == [issuer])
        #expect(metadata["scopes_supported"] as? [String] == ["files:read"])
        server.send(signal: SIGINT)
        #expect(try await server.finish().status == 0)
        let refused = try await ChildProcess.run(Executables.latchkey, ["dev-server", "--resource", "mcp"], input: "")
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("is not a path"))
    }

    @Test("a SIGINT the moment the issuer is printed stops it as cleanly as a later one: exit 0")
    func signalAtOnce() async throws {
        // The issuer line is the promise that the server is up, and a script may stop it at
        // once: bash reads the line and sends the signal within microseconds, which a test's
        // own pipes are too slow to do. Each run prints its exit status.
        let script = """
            for run in 1 2 3 4 5; do
                coproc server { exec "$1" dev-server --port 0 </dev/null 2>/dev/null; }
                pid=$server_PID
                read -r issuer <&"${server[0]}"
                kill -INT "$pid"
                wait "$pid"
                echo -n "$? "
            done
            """
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"), ["-c", script, "bash", Executables.latchkey.path], input: "")
        #expect(result.stdout == "0 0 0 0 0 ", "130 is a process killed by the signal, not stopped by it")
    }

    @Test("--admin-token sets the token; listening off loopback needs --allow-non-loopback and warns")
    func adminTokenAndHost() async throws {
        let token = "a-token-of-the-tests-own-0123456789"
        let server = try await ChildProcess.start(
            Executables.latchkey, ["dev-server", "--admin-token", token], input: "")
        let output = try await server.standardOutput { $0.contains("admin token: ") && $0.hasSuffix("\n") }
        #expect(output.contains("admin token: \(token)\n"))
        server.send(signal: SIGINT)
        #expect(try await server.finish().status == 0)

        let refused = try await ChildProcess.run(Executables.latchkey, ["dev-server", "--host", "0.0.0.0"], input: "")
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--allow-non-loopback"))
        let open = try await ChildProcess.start(
            Executables.latchkey, ["dev-server", "--host", "0.0.0.0", "--allow-non-loopback"], input: "")
        _ = try await open.standardOutput { $0.contains("admin token: ") }
        open.send(signal: SIGINT)
        let result = try await open.finish()
        #expect(result.status == 0)
        #expect(result.stderr.contains("published"))
    }

    @Test("--json prints the issuer and admin token as one JSON line; options naming a store are refused")
    func globalOptions() async throws {
        let server = try await ChildProcess.start(Executables.latchkey, ["dev-server", "--json"], input: "")
        let output = try await server.standardOutput { $0.hasSuffix("\n") }
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        #expect((fields["issuer"] as? String)?.hasPrefix("http://127.0.0.1:") == true)
        #expect((fields["adminToken"] as? String)?.isEmpty == false)
        server.send(signal: SIGINT)
        #expect(try await server.finish().status == 0)

        for (command, option) in [("dev-server", "--home"), ("demo", "--store"), ("demo", "--key-file")] {
            let refused = try await ChildProcess.run(Executables.latchkey, [command, option, "/tmp/x"], input: "")
            #expect(refused.status == 2, "\(command) \(option)")
            #expect(refused.stderr.contains("\(option) names a store; `\(command)` opens none"))
        }
        let demoJSON = try await ChildProcess.run(Executables.latchkey, ["demo", "--json"], input: "")
        #expect(demoJSON.status == 2)
        #expect(demoJSON.stderr.contains("no --json"))
    }

    @Test("a configuration file that cannot be read is a usage error")
    func badConfig() async throws {
        let result = try await ChildProcess.run(
            Executables.latchkey, ["dev-server", "--config", "/nonexistent/config.json"], input: "")
        #expect(result.status == 2)
        #expect(result.stderr.contains("/nonexistent/config.json"))
    }
}

extension Client {
    static func fetchJSON(_ url: String) async throws -> [String: Any] {
        let request = HTTPClientRequest(url: url)
        let response = try await http.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }
}
