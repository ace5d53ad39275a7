import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// Every prompt of `latchkey` answered through a real pseudo-terminal by something that types
/// its answers before the prompt shows (a script, `expect`, a password manager): nothing typed
/// ahead is thrown away.
@Suite("latchkey's prompts on a terminal")
struct CLITerminalTests: DevProviderCLITest {
    /// `latchkey --home HOME ARGUMENTS` on a terminal where `typed` was typed already.
    func onTerminal(_ device: Device, _ arguments: String..., typed: String) async throws -> CLI.Run {
        CLI.Run(
            try await ChildProcess.runOnTerminal(
                CLI.binary, ["--home", device.path] + arguments, environment: CLI.environment(), typed: typed,
                // A limit for a hang, not a speed: a passphrase-sealed key costs two scrypt runs
                // of 128 MiB, which took over 30 s beside the rest of the suite on two CPUs.
                limit: TestTiming.scaled(.seconds(120))))
    }

    @Test("client secret, password, a journey's name, password and choice, and signout's choice, all typed ahead")
    func typedAhead() async throws {
        try await withDevices { dev, device, _ in
            let secret = try await onTerminal(
                device, "provider", "add", "confidential", "--allow-password-grant", "--issuer",
                dev.issuer.absoluteString, "--client-id", "latchkey-confidential", "--client-secret-stdin",
                typed: "latchkey-confidential-secret\n")
            #expect(secret.status == 0, "\(secret.stderr)")
            #expect(secret.stderr.contains("Client secret: "), "the prompt shows")
            #expect(!secret.stderr.contains("latchkey-confidential-secret"), "never echoed")

            let password = try await onTerminal(
                device, "login", "--provider", "confidential", "--username", "alice", "--password-stdin",
                typed: "alice-password\n")
            #expect(password.status == 0, "\(password.stderr)")
            #expect(password.stdout.contains("Signed in as alice"))

            let added = try await device.run(
                "provider", "add", "stepped", "--ping-journey", "--server-url", dev.issuer.absoluteString, "--realm",
                "alpha", "--journey", "SteppedLogin", "--client-id", "latchkey-cli", "--scopes",
                "openid profile offline_access")
            #expect(added.status == 0, "\(added.stderr)")
            // A name, a hidden password, and Enter for the choice's default: three pages of
            // answers typed before the first page arrives.
            let journey = try await onTerminal(
                device, "login", "--provider", "stepped", typed: "bob\nbob-password\n\n")
            #expect(journey.status == 0, "\(journey.stderr)")
            #expect(journey.stdout.contains("Signed in as bob"))
            #expect(await dev.liveJourneySessions(of: "bob") == 1)

            let signOut = try await onTerminal(device, "signout", "alice", typed: "1\n")
            #expect(signOut.status == 0, "\(signOut.stdout)\(signOut.stderr)")
            let accounts = try await device.run("--json", "accounts").array
            #expect(accounts.compactMap { $0["username"] as? String } == ["bob"])
        }
    }

    @Test("Ctrl-C at a password prompt ends the process by the signal, and the terminal's echo is back on")
    func interruptedPrompt() async throws {
        try await withDevices { _, device, _ in
            // A pseudo-terminal of a Python helper's own, which it keeps open after the child
            // ends, so that it can tell whether echo was put back.
            let script = """
                import os, signal, subprocess, sys, termios
                primary, secondary = os.openpty()
                child = subprocess.Popen(sys.argv[1:], stdin=secondary, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                seen = b""
                while b"Password: " not in seen:
                    chunk = os.read(child.stderr.fileno(), 1024)
                    if not chunk:
                        break
                    seen += chunk
                child.send_signal(signal.SIGINT)
                status = child.wait(timeout=30)
                echo = termios.tcgetattr(secondary)[3] & termios.ECHO
                print("status", status, "echo", "on" if echo else "off", "prompted", b"Password: " in seen)
                """
            let helper = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [
                    "-c", script, CLI.binary.path, "--home", device.path, "login", "--username", "alice",
                    "--password-stdin",
                ],
                environment: CLI.environment(), input: "")
            #expect(helper.status == 0, "\(helper.stderr)")
            #expect(helper.stdout == "status -\(SIGINT) echo on prompted True\n", "\(helper.stdout)")
        }
    }

    @Test("a passphrase-sealed key: set twice and asked once on the terminal, never echoed")
    func passphrase() async throws {
        try await withDevices { _, device, _ in
            #expect(try await login(device, "alice").status == 0)
            let token = try await device.run("token").stdout
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let sealed = folder.file("store.key.sealed")
            let moved = try await onTerminal(
                device, "key", "move", "--to", "file", sealed, "--passphrase", typed: "correct horse\ncorrect horse\n")
            #expect(moved.status == 0, "\(moved.stderr)")
            #expect(moved.stderr.contains("Passphrase for \(sealed): "), "the prompt shows")
            #expect(!moved.stderr.contains("correct horse") && !moved.stdout.contains("correct horse"))
            let asked = try await onTerminal(device, "token", typed: "correct horse\n")
            #expect(asked.stdout == token, "\(asked.stderr)")
            let mistyped = try await onTerminal(
                device, "key", "move", "--to", "file", folder.file("other"), "--passphrase",
                typed: "correct horse\nnew horse\nwrong horse\n")  // the store's, then the new one twice
            #expect(mistyped.status == 2)
            #expect(mistyped.stderr.contains("differ"))
        }
    }
}
