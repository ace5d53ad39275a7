import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey agent`: a device's store handing tokens to commands that have none, through its
/// socket, within the limits of that socket; and how it stands a flood.
@Suite("latchkey agent")
struct CLIAgentTests: DevProviderCLITest {
    /// A running agent (``TestAgent``).
    typealias Agent = TestAgent

    @Test("a machine without a store gets tokens, proofs and claims from the agent; after a sign-out, exit 4")
    func ownerSocket() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await Agent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            let mode = try FileManager.default.attributesOfItem(atPath: agent.socket)[.posixPermissions] as? Int
            #expect(mode == 0o600, "the socket is the user's alone")
            let local = try await a.run("token")
            let remote = try await agent.ask("token")
            #expect(remote.status == 0, "\(remote.stderr)")
            #expect(remote.stdout == local.stdout, "the store's token, as the store's own command prints it")
            let claims = try await agent.ask("userinfo", "--json")
            #expect(claims.status == 0, "\(claims.stderr)")
            #expect(claims.object["preferred_username"] as? String == "alice")
            let userinfo = dev.issuer.appendingPathComponent("userinfo").absoluteString
            let api = try await agent.ask("api", userinfo)
            #expect(api.status == 0, "\(api.stderr)")
            #expect(api.stdout.contains("alice"))
            let json = try await agent.ask("token", "--json")
            #expect(json.object["issuer"] as? String == dev.issuer.absoluteString, "\(json.stdout)")
            #expect(try await agent.ask("token", "--id-token").status == 0, "the owner's socket gives ID tokens")
            let kubectl = try await agent.ask("credential", "kubectl")
            #expect(kubectl.status == 0 && kubectl.stdout.contains("ExecCredential"), "\(kubectl.stderr)")
            // A bearer token has no proof: refused as the store's own `proof` refuses it.
            let proof = try await agent.ask("proof", "GET", userinfo)
            #expect(proof.status == 2 && proof.stderr.contains("bearer tokens"), "\(proof.stderr)")

            #expect(try await a.run("signout", "--yes").status == 0)
            let signedOut = try await agent.ask("token")
            #expect(signedOut.status == 4, "\(signedOut.stderr)")
            #expect(!signedOut.stderr.isEmpty)
            let log = try String(contentsOfFile: a.path + "/agent.log", encoding: .utf8)
            #expect(log.contains("token") && log.contains("uid \(getuid())"))
            #expect(!log.contains(local.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "no token in the log")

            let stopped = try await agent.ask("agent", "--stop", "--socket", agent.socket)
            #expect(stopped.status == 0, "\(stopped.stderr)")
            #expect(try await agent.process.finish().status == 0)
            #expect(!FileManager.default.fileExists(atPath: agent.socket))
        }
    }

    @Test(
        "git through the agent: a token only for a host the agent's providers name, never over plain http to another machine"
    )
    func gitThroughAgent() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            try await answerGit(for: "git.example", dev, on: a)
            #expect(try await login(a, "alice").status == 0)
            let local = try await a.run("token")
            let agent = try await Agent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            let empty = try Device()
            defer { empty.cleanUp() }
            func git(_ input: String) async throws -> CLI.Run {
                try await empty.run(
                    arguments: ["credential", "git", "get"], input: input,
                    environment: ["LATCHKEY_AGENT_SOCK": agent.socket])
            }
            let named = try await git("protocol=https\nhost=git.example\n")
            #expect(named.status == 0, "\(named.stderr)")
            #expect(named.stdout.contains("username=alice\npassword=\(local.stdout)"), "\(named.stdout)")
            // The same questions, asked on the agent's own machine and through the agent, get the
            // same answer: none for a host no provider names, none over plain http.
            for input in [
                "protocol=https\nhost=any-host.example\n", "protocol=http\nhost=git.example\n",
                "protocol=http\nhost=any-host.example\n",
            ] {
                let remote = try await git(input)
                let here = try await a.run(arguments: ["credential", "git", "get"], input: input)
                #expect(remote.status == 0 && remote.stdout.isEmpty, "\(input): \(remote.stdout)")
                #expect(here.status == 0 && here.stdout.isEmpty, "\(input): \(here.stdout)")
                #expect(!remote.stdout.contains("password"), "no token for \(input)")
            }
            let plain = try await git("protocol=http\nhost=git.example\n")
            #expect(plain.stderr.contains("plain http"), "\(plain.stderr)")
            // A forwarding socket limited to a resource hands out no git token at all.
            let forward = try await Agent.start(
                on: a, ["--forward", "--account", "alice", "--resource", Agent.api],
                socket: folder.file("forward.sock"))
            let limited = try await empty.run(
                arguments: ["credential", "git", "get"], input: "protocol=https\nhost=git.example\n",
                environment: ["LATCHKEY_AGENT_SOCK": forward.socket])
            #expect(!limited.stdout.contains("password"), "\(limited.stdout)")
            for running in [agent, forward] {
                running.process.send(signal: SIGTERM)
                _ = try await running.process.finish()
            }
        }
    }

    @Test(
        "every command, on the store's machine and through the agent, with LATCHKEY_ACCOUNT: the same account, the same output"
    )
    func bothWays() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)  // bob is the default
            let agent = try await Agent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            let empty = try Device()
            defer { empty.cleanUp() }
            let userinfo = dev.url(.userinfo).absoluteString
            for command in [
                ["token"], ["token", "--format", "json"], ["userinfo", "--json"],
                ["credential", "kubectl", "--token", "access"], ["proof", "GET", userinfo], ["api", userinfo],
                ["token", "nobody"],
            ] {
                let here = try await a.run(arguments: command, environment: ["LATCHKEY_ACCOUNT": "alice"])
                let there = try await empty.run(
                    arguments: command, environment: ["LATCHKEY_ACCOUNT": "alice", "LATCHKEY_AGENT_SOCK": agent.socket])
                #expect(here.status == there.status, "\(command): \(here.stderr) | \(there.stderr)")
                #expect(here.stdout == there.stdout, "\(command): \(here.stdout) | \(there.stdout)")
                #expect(!there.stdout.contains("bob"), "\(command) through the agent used the default account")
            }
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test("a forwarding socket hands out one account's tokens for one resource; nothing else, each refusal said")
    func restrictedSocket() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            let agent = try await Agent.restricted(on: a, of: dev, in: folder)
            let api = Agent.api
            let narrowed = try await agent.ask("token", "--json")
            #expect(narrowed.status == 0, "\(narrowed.stderr)")
            #expect(narrowed.object["account"] as? String == "alice", "its one account, though bob is the default")
            let direct = try await a.run("token", "alice", "--resource", api)
            #expect(narrowed.object["token"] as? String == direct.stdout.trimmingCharacters(in: .newlines))
            for (arguments, refusal) in [
                (["token", "--resource", "https://other.latchkey.test/"], "does not hand out tokens for"),
                (["token", "bob"], "does not hand out tokens of bob"),
                (["token", "--id-token"], "ID tokens"),
                (["userinfo"], "userinfo"),
                (["agent", "--stop", "--socket", agent.socket], "cannot stop"),
            ] {
                let run = try await agent.ask(arguments: arguments)
                #expect(run.status == 1, "\(arguments): \(run.stderr)")
                #expect(run.stderr.contains(refusal), "\(arguments): \(run.stderr)")
            }
            // No command asks for a refresh token; a peer that does is refused all the same.
            let (python, script) = Scripts.python("agent/ask.py")
            let raw = try await ChildProcess.run(
                python, script + [agent.socket, #"{"operation":"refresh-token"}"#], environment: CLI.environment(),
                input: "")
            #expect(raw.stdout.contains("never hands out a refresh token"), "\(raw.stdout) \(raw.stderr)")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test(
        "SIGTERM, SIGINT or SIGHUP ends an agent, forwarding or the owner's, by that signal, and takes its socket away",
        arguments: [("--forward", SIGTERM), ("--forward", SIGINT), ("--foreground", SIGHUP)])
    func endedBySignal(mode: String, signal: Int32) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await Agent.start(on: a, [mode], socket: folder.file("ended.sock"))
            #expect(try await agent.ask("token").status == 0)
            agent.process.send(signal: signal)
            let ended = try await agent.process.finish()
            #expect(ended.status == signal, "ended by the signal: \(ended.stderr)")
            #expect(!FileManager.default.fileExists(atPath: agent.socket), "no socket left for the next agent to find")
        }
    }

    @Test("with --confirm and nobody to confirm on the agent's terminal, every use is refused")
    func unconfirmed() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            // In a session of its own (setsid): no terminal to ask on.
            let agent = try await Agent.start(on: a, ["--forward", "--confirm"], socket: folder.file("confirm.sock"))
            let refused = try await agent.ask("token")
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("not confirmed"), "\(refused.stderr)")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test("10,000 connections: those beyond the limit are turned away, memory stays bounded, the agent answers on")
    func flood() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await Agent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            #expect(try await agent.ask("token").status == 0)
            let before = try #require(Self.residentKiB(of: agent.process.processIdentifier))
            let (python, script) = Scripts.python("agent/flood.py")
            // 10,000; 2,000 under the thread sanitizer, whose agent is several times slower and
            // larger (its shadow memory counts too).
            let sanitized = TestTiming.slowdown >= 4
            let connections = sanitized ? 2_000 : 10_000
            let flood = try await ChildProcess.run(
                python, script + [agent.socket, "\(connections)", "200", "64"], environment: CLI.environment(),
                input: "")
            #expect(flood.status == 0, "\(flood.stderr)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(flood.stdout.utf8)) as? [String: Int], "\(flood.stdout)")
            #expect(report["opened"] == connections)
            // 200 held at a time, 64 admitted: the rest of each batch is turned away.
            #expect((report["busy"] ?? 0) >= connections / 200 * (200 - 64), "\(report)")
            let after = try #require(Self.residentKiB(of: agent.process.processIdentifier))
            #expect(after - before < (sanitized ? 192 : 48) * 1024, "grew from \(before) KiB to \(after) KiB")
            let answered = try await agent.ask("token")
            #expect(answered.status == 0, "the agent answers after the flood and the peers that left mid-request")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test("a forwarded socket answers 100 requests at once, then 20 a second, and closes a slow writer's connection")
    func forwardedBounds() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let agent = try await Agent.start(on: a, ["--forward"], socket: folder.file("forward.sock"))
            let (python, script) = Scripts.python("agent/bounds.py")
            let run = try await ChildProcess.run(
                python, script + [agent.socket, "1000"], environment: CLI.environment(), input: "")
            #expect(run.status == 0, "\(run.stderr)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            let answered = report["answered"] as? Int ?? 0
            // The burst and what the rate refilled meanwhile; the rest told to wait.
            #expect(answered >= 100 && answered < 1_000, "\(report)")
            #expect(report["busy"] as? Int == 1_000 - answered, "\(report)")
            #expect(report["slowClosed"] as? Bool == true, "\(report)")
            // A client of a later wire version is told so, not answered as if it were this one's.
            let newer = report["newer"] as? [String: Any]
            #expect(newer?["failure"] as? String == "invalid", "\(report)")
            #expect((newer?["message"] as? String)?.contains("wire version 2") == true, "\(report)")
            #expect(try await Agent.ask(through: agent.socket, ["token"]).status == 0, "answered again")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    @Test("--confirm on a terminal: a yes lets one use through, a no refuses the next; the agent ends with its socket")
    func confirmedOnTerminal() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let socket = folder.file("confirm.sock")
            // Typed ahead: a yes for the first question, a no for the second.
            async let served = ChildProcess.runOnTerminal(
                CLI.binary, ["--home", a.path, "agent", "--forward", "--confirm", "--socket", socket],
                environment: CLI.environment(), typed: "y\nn\n", limit: TestTiming.scaled(.seconds(60)))
            var waited = 0
            while !FileManager.default.fileExists(atPath: socket) {
                waited += 1
                try #require(waited < 500, "the agent listens")
                try await Task.sleep(for: .milliseconds(20))
            }
            let confirmed = try await Agent.ask(through: socket, ["token"])
            #expect(confirmed.status == 0, "\(confirmed.stderr)")
            let refused = try await Agent.ask(through: socket, ["token"])
            #expect(refused.status == 1 && refused.stderr.contains("not confirmed"), "\(refused.stderr)")
            // Its session's runtime folder removed: the agent goes too.
            try FileManager.default.removeItem(atPath: socket)
            let ended = try await served
            #expect(ended.status == 0, "\(ended.stderr)")
            let log = try String(contentsOfFile: a.path + "/agent.log", encoding: .utf8)
            #expect(log.contains("answered"), "\(log)")
            #expect(log.contains("refused: not confirmed"), "\(log)")
        }
    }

    @Test(
        "eval \"$(latchkey agent)\": it goes to the background in the runtime folder, prints the lines, and --stop ends it"
    )
    func background() async throws {
        let runtime = try TemporaryFolder()
        defer { runtime.cleanUp() }
        chmod(runtime.path, 0o700)
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let started = try await a.run(arguments: ["agent"], environment: ["XDG_RUNTIME_DIR": runtime.path])
            #expect(started.status == 0, "\(started.stderr)")
            let socket = runtime.path + "/latchkey/agent.sock"
            #expect(
                started.stdout.hasPrefix(
                    "LATCHKEY_AGENT_SOCK='\(socket)'; export LATCHKEY_AGENT_SOCK;\necho Agent pid "))
            let pid = try #require(Int32(started.stdout.split(separator: " ").last?.dropLast(2) ?? ""))
            #expect(Self.isRunning(pid), "the agent runs on")
            #expect(try await Agent.ask(through: socket, ["token"]).status == 0)
            let stopped = try await a.run(arguments: ["agent", "--stop"], environment: ["LATCHKEY_AGENT_SOCK": socket])
            #expect(stopped.status == 0, "\(stopped.stderr)")
            var waited = 0
            while Self.isRunning(pid) {
                waited += 1
                try #require(waited < 500, "the agent ends")
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    @Test("with an agent for its store, the quick path alone refreshes: 32 at once on an expired token, one refresh")
    func quickPathThroughAgent() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, b in
            try await signInWithShortToken(dev, a)
            let agent = try await Agent.start(on: a, ["--foreground"], socket: folder.file("agent.sock"))
            // No latchkey-full beside this latchkey: what it cannot answer alone fails.
            let front = try CLIQuickTests.LoneFront()
            defer { front.folder.cleanUp() }
            dev.faults.resetCounters()
            let runs = try await withThrowingTaskGroup { group in
                for _ in 0..<32 {
                    group.addTask {
                        try await front.run(a, ["token"], environment: ["LATCHKEY_AGENT_SOCK": agent.socket])
                    }
                }
                return try await group.reduce(into: [CLI.Run]()) { $0.append($1) }
            }
            for run in runs { #expect(run.status == 0, "\(run.stderr)") }
            #expect(Set(runs.map(\.stdout)).count == 1, "every process prints the same new token")
            #expect(dev.faults.count("token.refresh_token") == 1, "one refresh, in the agent")
            #expect(try await a.run("token").stdout == runs.first?.stdout, "stored, as any refresh")
            // kubectl's helper, on an expired token again.
            try await signInWithShortToken(dev, a)
            let kubectl = try await front.run(
                a, ["credential", "kubectl", "--token", "access"], environment: ["LATCHKEY_AGENT_SOCK": agent.socket])
            #expect(kubectl.status == 0 && kubectl.stdout.contains("ExecCredential"), "\(kubectl.stderr)")
            // An agent of another store is not asked: b's expired token is b's own to refresh.
            try await signInWithShortToken(dev, b)
            let other = try await front.run(b, ["token"], environment: ["LATCHKEY_AGENT_SOCK": agent.socket])
            #expect(other.status != 0, "handed over to a latchkey-full that is not there")
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }

    /// Whether process `pid` runs: not gone, and not a zombie its new parent has yet to reap.
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let state = stat.split(separator: ")").last?.split(separator: " ").first
        else { return false }
        return state != "Z"
    }

    /// The resident memory of process `pid`, in KiB (`VmRSS` of `/proc/PID/status`).
    static func residentKiB(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
            Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
    }
}
