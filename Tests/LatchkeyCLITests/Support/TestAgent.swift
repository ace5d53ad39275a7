import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A running agent: its process and socket.
struct TestAgent {
    let process: ChildProcess
    let socket: String

    /// Starts `latchkey --home HOME agent ARGUMENTS --socket SOCKET` in its own session (no
    /// terminal to confirm anything on), once it listens.
    static func start(on device: Device, _ arguments: [String], socket: String) async throws -> TestAgent {
        let process = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/setsid"),
            [CLI.binary.path, "--home", device.path, "agent"] + arguments + ["--socket", socket],
            environment: CLI.environment(), input: "")
        // A forwarding socket is announced on standard error; the owner's as ssh-agent does.
        let said =
            arguments.contains("--forward")
            ? try await process.standardError { $0.contains("Forwarding socket") }
            : try await process.standardOutput { $0.contains("export") }
        #expect(said.contains(socket), "\(said)")
        return TestAgent(process: process, socket: socket)
    }

    /// The resource a restricted socket hands out tokens for.
    static let api = "https://api.latchkey.test/"

    /// alice and bob signed in on `device` (bob the default), and a forwarding socket for
    /// alice's tokens for ``api`` only.
    static func restricted(on device: Device, of dev: DevProvider, in folder: TemporaryFolder) async throws
        -> TestAgent
    {
        // The user paired the provider with the resource: its tokens go there.
        #expect(try await device.run("provider", "remove", "dev").status == 0)
        let added = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
            "--client-id", "latchkey-cli", "--resource", api)
        #expect(added.status == 0, "\(added.stderr)")
        for user in ["alice", "bob"] {
            let signedIn = try await device.run(
                arguments: ["login", "--username", user, "--password-stdin"], input: "\(user)-password")
            #expect(signedIn.status == 0, "\(signedIn.stderr)")
        }
        return try await start(
            on: device, ["--forward", "--account", "alice", "--resource", api], socket: folder.file("forward.sock"))
    }

    /// `latchkey ARGUMENTS` as a machine with no store runs it: an empty home, the socket.
    func ask(_ arguments: String...) async throws -> CLI.Run { try await ask(arguments: arguments) }

    func ask(arguments: [String]) async throws -> CLI.Run { try await Self.ask(through: socket, arguments) }

    static func ask(through socket: String, _ arguments: [String]) async throws -> CLI.Run {
        let empty = try Device()
        defer { empty.cleanUp() }
        return try await empty.run(arguments: arguments, environment: ["LATCHKEY_AGENT_SOCK": socket])
    }
}
