import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey`'s shell completions, run as bash runs them: the generated script sourced, the
/// completion function called on a command line, and what it offers read back.
@Suite("latchkey completions")
struct CLICompletionTests {
    @Test("bash completes provider names, account names and enum values from the home named or in the environment")
    func bash() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        let elsewhere = try Device()
        defer {
            device.cleanUp()
            elsewhere.cleanUp()
        }
        for name in ["dev", "corp"] {
            let added = try await device.run(
                "provider", "add", name, "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
        }
        for user in ["alice", "bob"] {
            let login = try await device.run(
                "login", "--provider", "dev", "--username", user, "--password-stdin", input: "\(user)-password")
            #expect(login.status == 0, "\(login.stderr)")
        }
        let script = URL(fileURLWithPath: device.path).appendingPathComponent("latchkey.bash")
        let generated = try await CLI.run(["--generate-completion-script", "bash"])
        #expect(generated.status == 0)
        try Data(generated.stdout.utf8).write(to: script)
        let bash = Bash(script: script, home: device.path)

        #expect(try await bash.complete("login", "--provider", "") == ["corp", "dev"])
        #expect(try await bash.complete("login", "--provider", "c") == ["corp"])
        #expect(try await bash.complete("provider", "remove", "") == ["corp", "dev"])
        #expect(try await bash.complete("use", "") == ["alice", "bob"])
        #expect(try await bash.complete("token", "b") == ["bob"])
        #expect(try await bash.complete("signout", "") == ["alice", "bob"])
        #expect(try await bash.complete("credential", "kubectl", "--account", "a") == ["alice"])
        // The home on the command line wins over the environment's.
        #expect(try await bash.complete("use", "--home", elsewhere.path, "") == [])
        #expect(
            try await Bash(script: script, home: elsewhere.path).complete("use", "--home", device.path, "")
                == ["alice", "bob"])
        // Completing in a home with no store creates none.
        let empty = URL(fileURLWithPath: elsewhere.path).appendingPathComponent("never")
        #expect(try await Bash(script: script, home: empty.path).complete("use", "") == [])
        #expect(!FileManager.default.fileExists(atPath: empty.path))
        // Enum options offer their values.
        #expect(try await bash.complete("signout", "--policy", "") == ["always-local", "server-first"])
        #expect(try await bash.complete("credential", "kubectl", "--token", "") == ["access", "id"])
        #expect(try await bash.complete("revoke", "--type", "") == ["access", "all", "device-secret", "refresh"])
    }

    /// Runs bash's completion of `latchkey` with the generated script.
    struct Bash {
        let script: URL
        let home: String

        /// What bash offers for the command line `latchkey WORDS` (the last word being completed).
        func complete(_ words: String...) async throws -> [String] {
            let all = [CLI.binary.path] + words
            let quoted = all.map { "'\($0)'" }.joined(separator: " ")
            let program = """
                shopt -s extglob
                source '\(script.path)'
                COMP_WORDS=(\(quoted))
                COMP_CWORD=\(all.count - 1)
                COMP_LINE=\"${COMP_WORDS[*]}\"
                COMP_POINT=${#COMP_LINE}
                _latchkey latchkey "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' \"${COMPREPLY[@]}\"
                """
            let run = try await ChildProcess.runBinary(
                URL(fileURLWithPath: "/bin/bash"), ["-c", program],
                environment: CLI.environment(["LATCHKEY_HOME": home]), input: [])
            #expect(run.status == 0)
            return String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").map(String.init).filter {
                !$0.isEmpty
            }.sorted()
        }
    }
}
