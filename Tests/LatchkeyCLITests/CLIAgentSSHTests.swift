import Foundation
import LatchkeyTestSupport
import Testing

/// `latchkey agent` over real OpenSSH: a remote command with nothing but the forwarded socket
/// and the binary gets tokens; a restricted socket refuses what it does not allow.
@Suite("latchkey agent over ssh -R", .enabled(if: providersRequired || LoopbackSSH.isAvailable))
struct CLIAgentSSHTests: DevProviderCLITest {
    @Test("ssh -R: the remote gets a token and its userinfo, and exit 4 once the laptop signs out")
    func forwardedOwnerSocket() async throws {
        let ssh = try await LoopbackSSH.start()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await TestAgent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            let token = try await ssh.run(forwarding: agent.socket, [CLI.binary.path, "token"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(token.stdout == (try await a.run("token")).stdout)
            let claims = try await ssh.run(forwarding: agent.socket, [CLI.binary.path, "userinfo"])
            #expect(claims.status == 0, "\(claims.stderr)")
            #expect(claims.stdout.contains("alice"))
            #expect(try await a.run("signout", "--yes").status == 0)
            let signedOut = try await ssh.run(forwarding: agent.socket, [CLI.binary.path, "token"])
            #expect(signedOut.status == 4, "\(signedOut.stderr)")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
        await ssh.stop()
    }

    @Test("ssh -R of a restricted socket: a refresh token, another account or another resource is refused, saying so")
    func forwardedRestrictedSocket() async throws {
        let ssh = try await LoopbackSSH.start()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            let agent = try await TestAgent.restricted(on: a, of: dev, in: folder)
            let allowed = try await ssh.run(forwarding: agent.socket, [CLI.binary.path, "token"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            for (command, refusal) in [
                (["token", "bob"], "does not hand out tokens of bob"),
                (["token", "--resource", "https://other.latchkey.test/"], "does not hand out tokens for"),
            ] {
                let refused = try await ssh.run(forwarding: agent.socket, [CLI.binary.path] + command)
                #expect(refused.status == 1, "\(command): \(refused.stderr)")
                #expect(refused.stderr.contains(refusal), "\(command): \(refused.stderr)")
            }
            let (_, script) = Scripts.python("agent/ask.py")
            let raw = try await ssh.run(
                forwarding: agent.socket,
                ["/usr/bin/env"] + script + ["-", #"{"operation":"refresh-token"}"#])
            #expect(raw.stdout.contains("never hands out a refresh token"), "\(raw.stdout) \(raw.stderr)")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
        await ssh.stop()
    }
}
