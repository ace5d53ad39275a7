import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("latchkey's keys")
struct CLIKeyTests: DevProviderCLITest {
    @Test("keys: generate, a key kept elsewhere (--key-file, --key-fd), rotate; client secrets sealed and re-sealed")
    func keys() async throws {
        try await withDevices { dev, a, _ in
            // A confidential client: its secret must survive the rotation.
            let confidential = try await a.run(
                arguments: [
                    "provider", "add", "corp", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                    "--client-id",
                    "latchkey-confidential", "--client-secret-stdin", "--auth-method", "basic",
                ],
                input: "latchkey-confidential-secret")
            #expect(confidential.status == 0, "\(confidential.stderr)")
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            let before = try await a.run("token")
            #expect(before.status == 0)
            let rotate = try await a.run("key", "rotate")
            #expect(rotate.status == 0, "\(rotate.stderr)")
            #expect(try await a.run("token").stdout == before.stdout, "the tokens survive the new key")
            #expect(try await a.run("refresh", "alice").status == 0, "and the confidential client's secret too")
            #expect(try await login(a, "bob", "--provider", "corp").status == 0)

            // A key kept elsewhere: generated once, never replaced, named on every run.
            let keys = try TemporaryKeys()
            defer { keys.cleanUp() }
            let keyFile = keys.path + "/home.key"
            #expect(try await CLI.run(["key", "generate", keyFile]).status == 0)
            #expect(try await CLI.run(["key", "generate", keyFile]).status == 2, "an existing key is never replaced")
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let elsewhere = try Device()
            defer { elsewhere.cleanUp() }
            #expect(
                try await elsewhere.run(
                    "--key-file", keyFile, "provider", "add", "dev", "--allow-password-grant", "--issuer",
                    dev.issuer.absoluteString,
                    "--client-id", "latchkey-cli"
                ).status == 0)
            #expect(
                try await elsewhere.run(
                    arguments: ["--key-file", keyFile] + ["login", "--username", "alice", "--password-stdin"],
                    input: "alice-password"
                ).status == 0)
            #expect(!FileManager.default.fileExists(atPath: elsewhere.path + "/credentials.sqlite.key"))
            #expect(try await elsewhere.run("--key-file", keyFile, "token").status == 0)
            #expect(try await elsewhere.run("token").status == 1, "without its key the store does not open")
            // The same key through a descriptor, as a secret manager would hand it over.
            let shell = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", "exec \"$0\" --home \"$1\" --key-fd 3 token 3< \"$2\"", CLI.binary.path, elsewhere.path,
                    keyFile,
                ],
                environment: CLI.environment())
            #expect(shell.status == 0, "\(shell.stderr)")
            #expect(shell.stdout == (try await elsewhere.run("--key-file", keyFile, "token")).stdout)
        }
    }

    @Test("a client secret an earlier version kept in the clear is sealed on the next run")
    func legacyClientSecret() async throws {
        try await withDevices { dev, a, _ in
            let file = a.path + "/providers.json"
            let legacy = """
                [{"name": "corp", "kind": "openid", "clientID": "latchkey-confidential", "issuer": "\(dev.issuer.absoluteString)",
                  "clientSecret": "latchkey-confidential-secret", "authMethod": "basic", "allowsPasswordGrant": true}]
                """
            try Data(legacy.utf8).write(to: URL(fileURLWithPath: file))
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            let sealed = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!sealed.contains("latchkey-confidential-secret"))
            #expect(try await a.run("refresh").status == 0)
        }
    }

    @Test("latchkey runs without core dumps: a core would hold decrypted tokens and the key")
    func noCoreDumps() async throws {
        try await withDevices { _, a, _ in
            // A command that waits (for the browser), so its limits can be read while it runs.
            let waiting = try await CLI.start([
                "--home", a.path, "login", "--browser", "--no-browser", "--timeout", "30",
            ])
            _ = try await waiting.standardError { $0.contains("Open this URL") }
            let limits = try String(contentsOfFile: "/proc/\(waiting.processIdentifier)/limits", encoding: .utf8)
            waiting.send(signal: SIGTERM)
            _ = try await waiting.finish()
            let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
            #expect(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"])
        }
    }

    @Test(
        "key rotate while 8 processes refresh: no refresh answer is lost, the grant stays alive",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func rotateWhileRefreshing() async throws {
        try await withDevices { dev, a, _ in
            try await signInWithShortToken(dev, a)
            // Each refresh takes a while, so that refreshes are under way when the rotation begins.
            dev.faults.set(.latency(milliseconds: 150), for: .token)
            dev.faults.resetCounters()
            async let refreshing: [[CLI.Run]] = {
                var rounds: [[CLI.Run]] = []
                for _ in 0..<3 { rounds.append(try await a.runTogether(8, ["refresh"])) }
                return rounds
            }()
            while dev.faults.count(.token) == 0 { try await Task.sleep(for: .milliseconds(10)) }
            let rotate = try await a.run("key", "rotate")
            #expect(rotate.status == 0, "\(rotate.stdout)\(rotate.stderr)")
            for (round, runs) in try await refreshing.enumerated() {
                for run in runs { #expect(run.status == 0, "round \(round): \(run.stderr)") }
            }
            #expect(dev.faults.count("token.refresh_token") == 24, "every refresh sent its own, none replayed")
            // The rotated refresh token chain is intact: the account works, under the new key.
            dev.faults.clear()
            let refreshed = try await a.run("refresh")
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            let token = try await a.run("token")
            #expect(token.status == 0, "\(token.stderr)")
            #expect(try await Introspect.isActive(token.stdout, at: dev))
        }
    }
}
