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
            // The global options: --json is taken; those that name a store are refused, and say why.
            let json = try await CLI.run(["key", "generate", keys.path + "/other.key", "--json"])
            #expect(json.status == 0 && json.stdout.contains("\"file\""), "\(json.stderr)")
            let homed = try await CLI.run(["--home", keys.path, "key", "generate", keys.path + "/third.key"])
            #expect(homed.status == 2, "\(homed.stderr)")
            #expect(homed.stderr.contains("--home names a store; `key generate` opens none"))
            #expect(!FileManager.default.fileExists(atPath: keys.path + "/third.key"))
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

    @Test("key rotate killed at any moment: the next command opens every secret and token; no temporary file is left")
    func killedRotation() async throws {
        try await withDevices { dev, a, _ in
            try await addConfidentialProvider(to: a, at: dev)
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            // Kills spread over the whole rotation: before, during and after the store's commit.
            for round in 0..<24 {
                let rotation = try await CLI.start(["--home", a.path, "key", "rotate"])
                try await Task.sleep(for: TestTiming.scaled(.milliseconds(12 * round)))
                rotation.send(signal: SIGKILL)
                _ = try await rotation.finish()
                let refreshed = try await a.run("refresh")
                #expect(refreshed.status == 0, "round \(round): \(refreshed.stderr)")
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: a.path).filter {
                    $0.hasSuffix(".tmp")
                }
                #expect(leftovers.isEmpty, "round \(round): \(leftovers)")
            }
            let rotated = try await a.run("key", "rotate")
            #expect(rotated.status == 0, "\(rotated.stderr)")
            #expect(try await a.run("refresh").status == 0)
            #expect(!FileManager.default.fileExists(atPath: a.path + "/providers.json.next"))
        }
    }

    @Test("a rotation's waiting provider list, settled by 16 commands at once: one puts it in place, none fails")
    func pendingListSettledTogether() async throws {
        try await withDevices { dev, a, _ in
            try await addConfidentialProvider(to: a, at: dev)
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            let list = a.path + "/providers.json"
            let written = try Data(contentsOf: URL(fileURLWithPath: list))
            // A rotation cut short after the store was sealed again: the list waiting beside it
            // opens with the store's key, so the next commands put it in place, all at once.
            for round in 0..<16 {
                try written.write(to: URL(fileURLWithPath: list + ".next"))
                chmod(list + ".next", 0o600)
                for run in try await a.runTogether(16, ["token", "--force"]) {
                    #expect(run.status == 0, "round \(round): \(run.stderr)")
                }
                #expect(!FileManager.default.fileExists(atPath: list + ".next"), "round \(round)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: list)) == written, "round \(round)")
            }
        }
    }

    @Test("a provider whose client secret does not open stops only the commands that need it")
    func unopenableSecret() async throws {
        try await withDevices { dev, a, _ in
            try await addConfidentialProvider(to: a, at: dev)
            #expect(try await login(a, "alice", "--provider", "dev").status == 0)
            #expect(try await login(a, "bob", "--provider", "corp").status == 0)
            // The sealed secret is replaced by one sealed under another key.
            let file = a.path + "/providers.json"
            var list = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [[String: Any]]
            )
            for index in list.indices where list[index]["name"] as? String == "corp" {
                list[index]["sealedClientSecret"] = Data(repeating: 7, count: 60).base64EncodedString()
            }
            try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: file))
            chmod(file, 0o600)
            #expect(try await a.run("refresh", "alice").status == 0, "the other provider's account works")
            #expect(try await a.run("accounts").status == 0)
            let bob = try await a.run("refresh", "bob")
            #expect(bob.status == 1)
            #expect(bob.stderr.contains("corp"), "\(bob.stderr)")
            #expect(try await a.run("signout", "alice", "--yes").status == 0)
        }
    }

    @Test("a provider list open to other users' writes, or a symbolic link, is refused: no token is sent")
    func untrustedProviderList() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let file = a.path + "/providers.json"
            dev.faults.resetCounters()
            chmod(file, 0o666)
            let open = try await a.run("refresh")
            #expect(open.status == 1)
            #expect(open.stderr.contains("chmod go-w"), "\(open.stderr)")
            chmod(file, 0o600)
            let elsewhere = a.path + "/elsewhere.json"
            try FileManager.default.moveItem(atPath: file, toPath: elsewhere)
            try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: elsewhere)
            let linked = try await a.run("refresh")
            #expect(linked.status == 1)
            #expect(linked.stderr.contains("symbolic link"), "\(linked.stderr)")
            #expect(dev.faults.count(.token) == 0, "no refresh token was sent")
            try FileManager.default.removeItem(atPath: file)
            try FileManager.default.moveItem(atPath: elsewhere, toPath: file)
            #expect(try await a.run("refresh").status == 0, "trusted again once fixed")
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

    /// Adds the development provider's confidential client as provider `corp`, its secret
    /// sealed in the home's provider list.
    private func addConfidentialProvider(to home: Device, at dev: DevProvider) async throws {
        let added = try await home.run(
            arguments: [
                "provider", "add", "corp", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-confidential", "--client-secret-stdin",
            ], input: "latchkey-confidential-secret")
        #expect(added.status == 0, "\(added.stderr)")
    }
}
