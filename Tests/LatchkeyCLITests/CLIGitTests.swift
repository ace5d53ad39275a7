import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey credential git`, run by the real `git` (Debian's) against a loopback git server that
/// lets a request through only with a live access token.
@Suite("latchkey as git's credential helper")
struct CLIGitTests {
    /// A dev provider, a git server in front of one repository, and a home signed in as alice
    /// with the server's host mapped to the provider.
    struct Setup {
        let dev: DevProvider
        let server: GitServer
        let device: Device
        let scratch: TemporaryFolder

        static func make(accessTokenLifetime: Int? = nil) async throws -> Setup {
            let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
            let server = try await GitServer.start { token in await dev.isActive(token) }
            let device = try Device()
            let scratch = try TemporaryFolder()
            let setup = Setup(dev: dev, server: server, device: device, scratch: scratch)
            // The repository, with one commit, written straight to the server's folder.
            try await setup.git(["init", "-q", "--bare", server.root.file("repo.git")])
            try await setup.git(["clone", "-q", server.root.file("repo.git"), scratch.file("seed")])
            try Data("hello\n".utf8).write(to: URL(fileURLWithPath: scratch.file("seed/README")))
            try await setup.git(["-C", scratch.file("seed"), "add", "README"])
            try await setup.git(["-C", scratch.file("seed"), "commit", "-q", "-m", "first"])
            try await setup.git(["-C", scratch.file("seed"), "push", "-q", "origin", "HEAD:refs/heads/main"])
            try await setup.git(["--git-dir", server.root.file("repo.git"), "symbolic-ref", "HEAD", "refs/heads/main"])

            let added = try await device.run(
                "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli",
                "--allow-password-grant", "--git-host", server.host)
            #expect(added.status == 0, "\(added.stderr)")
            if let accessTokenLifetime { await dev.setAccessTokenLifetime(accessTokenLifetime) }
            let login = try await device.run(
                "login", "--username", "alice", "--password-stdin", input: "alice-password")
            #expect(login.status == 0, "\(login.stderr)")
            await dev.setAccessTokenLifetime(3_600)
            return setup
        }

        /// The environment of git: no user or system configuration, no prompts, and Latchkey
        /// as the only credential helper.
        var gitEnvironment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = scratch.path
            environment["GIT_CONFIG_NOSYSTEM"] = "1"
            environment["GIT_TERMINAL_PROMPT"] = "0"
            environment["GIT_ASKPASS"] = nil
            environment["SSH_ASKPASS"] = nil
            return environment
        }

        var helper: String { "!'\(Executables.latchkey.path)' --home '\(device.path)' credential git" }

        /// Runs git with Latchkey as its credential helper; a failure fails the test unless
        /// `expectFailure`.
        @discardableResult
        func git(_ arguments: [String], expectFailure: Bool = false) async throws -> ChildProcess.Result {
            let result = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/git"),
                [
                    "-c", "credential.helper=", "-c", "credential.helper=\(helper)", "-c", "user.name=Alice",
                    "-c", "user.email=alice@example.com", "-c", "init.defaultBranch=main",
                ] + arguments, environment: gitEnvironment, input: "")
            if !expectFailure { #expect(result.status == 0, "git \(arguments): \(result.stderr)") }
            return result
        }

        func stop() async {
            await server.stop()
            await dev.stop()
            device.cleanUp()
            scratch.cleanUp()
        }
    }

    @Test("git clones and pushes over HTTP with the account's live access token; other hosts get no answer")
    func cloneAndPush() async throws {
        let setup = try await Setup.make()
        let clone = setup.scratch.file("clone")
        try await setup.git(["clone", "-q", setup.server.url("repo.git"), clone])
        #expect(FileManager.default.fileExists(atPath: clone + "/README"))
        try Data("more\n".utf8).write(to: URL(fileURLWithPath: clone + "/NOTES"))
        try await setup.git(["-C", clone, "add", "NOTES"])
        try await setup.git(["-C", clone, "commit", "-q", "-m", "second"])
        try await setup.git(["-C", clone, "push", "-q", "origin", "main"])
        let log = try await setup.git(["--git-dir", setup.server.root.file("repo.git"), "log", "--format=%s", "main"])
        #expect(log.stdout.split(separator: "\n") == ["second", "first"])

        let counters = setup.server.counters
        #expect(counters.anonymous >= 1, "git asked without credentials first, then asked its helper")
        #expect(counters.refused == 0)
        #expect(counters.tokens.count == 1)
        let token = try await setup.device.run("token")
        #expect(counters.tokens == [token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])

        // The helper's own answers: a username, the token, its expiry; nothing for another host.
        let answer = try await setup.device.run(
            "credential", "git", "get", input: "protocol=http\nhost=\(setup.server.host)\n")
        let fields = Dictionary(
            answer.stdout.split(separator: "\n").map { line in
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { first, _ in first })
        #expect(fields["username"] == "alice")
        #expect(fields["password"] == token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let expiry = try #require(fields["password_expiry_utc"].flatMap(Double.init))
        #expect(expiry > Date().timeIntervalSince1970)
        let other = try await setup.device.run(
            "credential", "git", "get", input: "protocol=https\nhost=git.elsewhere.example\n")
        #expect(other.status == 0)
        #expect(other.stdout.isEmpty)
        await setup.stop()
    }

    @Test("20 git processes at once on an expired token make one refresh; a token the server refuses is replaced")
    func expiredAndRefused() async throws {
        // The token has expired when it is issued.
        let setup = try await Setup.make(accessTokenLifetime: 0)
        setup.dev.faults.resetCounters()
        let results = try await AsyncGate.fanOut.run {
            try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await setup.git(["ls-remote", setup.server.url("repo.git")]) }
                }
                var results: [ChildProcess.Result] = []
                for try await result in group { results.append(result) }
                return results
            }
        }
        #expect(results.allSatisfy { $0.status == 0 && $0.stdout.contains("refs/heads/main") })
        #expect(setup.dev.faults.count("token.refresh_token") == 1)
        #expect(setup.server.counters.tokens.count == 1, "every process used the one refreshed token")

        // The server refuses a live token: git says so to the helper (erase), and the next get
        // brings a refreshed one.
        setup.server.refuseNextRequest()
        let refused = try await setup.git(["ls-remote", setup.server.url("repo.git")], expectFailure: true)
        #expect(refused.status != 0)
        try await setup.git(["ls-remote", setup.server.url("repo.git")])
        #expect(setup.dev.faults.count("token.refresh_token") == 2)
        #expect(setup.server.counters.tokens.count == 2)
        await setup.stop()
    }

    @Test(
        "the helper answers for https and loopback http only (unless allowed), never with a line break, never past 64 KiB"
    )
    func refusals() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.users.append(
            .init(username: "mallory\nquit=1", password: "mallory-password", name: "Mallory", email: "m@example.com"))
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let strict = try Device()
        let lenient = try Device()
        defer {
            strict.cleanUp()
            lenient.cleanUp()
        }
        for (device, extra) in [(strict, [String]()), (lenient, ["--git-allow-http"])] {
            let added = try await device.run(
                arguments: [
                    "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli",
                    "--allow-password-grant", "--git-host", "git.example.com",
                ] + extra)
            #expect(added.status == 0, "\(added.stderr)")
            let login = try await device.run(
                "login", "--username", "alice", "--password-stdin", input: "alice-password")
            #expect(login.status == 0, "\(login.stderr)")
        }
        func get(_ device: Device, _ request: String) async throws -> CLI.Run {
            try await device.run("credential", "git", "get", input: request)
        }
        let plain = try await get(strict, "protocol=http\nhost=git.example.com\n")
        #expect(plain.stdout.isEmpty, "no token over plain http")
        #expect(plain.stderr.contains("plain http"))
        #expect(try await get(strict, "protocol=https\nhost=git.example.com\n").stdout.contains("password="))
        #expect(try await get(lenient, "protocol=http\nhost=git.example.com\n").stdout.contains("password="))

        // A request far longer than git ever sends is refused before it is read whole.
        let huge = "protocol=https\nhost=git.example.com\npath=" + String(repeating: "a", count: 200_000) + "\n"
        let long = try await get(strict, huge)
        #expect(long.status == 2)
        #expect(long.stdout.isEmpty)

        // A username that carries a line break would add lines of its own to git's input.
        let mallory = try await strict.run(
            "login", "--username", "mallory\nquit=1", "--password-stdin", input: "mallory-password")
        #expect(mallory.status == 0, "\(mallory.stderr)")
        #expect(
            try await strict.run(
                "use", try #require(try await strict.run("--json", "accounts").array.last?["id"] as? String)
            ).status == 0)
        let injected = try await get(strict, "protocol=https\nhost=git.example.com\n")
        #expect(injected.stdout.isEmpty, "\(injected.stdout)")
        let accounts = try await strict.run("accounts")
        #expect(!accounts.stdout.split(separator: "\n").contains { $0.hasPrefix("quit=") }, "\(accounts.stdout)")
        await dev.stop()
    }
}
