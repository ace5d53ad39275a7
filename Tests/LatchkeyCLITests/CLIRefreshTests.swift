import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("latchkey refreshes across processes")
struct CLIRefreshTests: DevProviderCLITest {
    @Test("eight `latchkey token` processes on a stale credential: one refresh, one token, the grant alive (3 rounds)")
    func parallelTokens() async throws {
        try await withDevices { dev, a, _ in
            for round in 0..<3 {
                if round == 0 {
                    try await signInWithShortToken(dev, a)
                } else {
                    // A refresh that brings an expired token: stale at once.
                    await dev.setAccessTokenLifetime(0)
                    #expect(try await a.run("refresh").status == 0)
                    await dev.setAccessTokenLifetime(3_600)
                }
                dev.faults.resetCounters()
                let runs = try await a.runTogether(8, ["token"])
                for run in runs { #expect(run.status == 0, "round \(round): \(run.stderr)") }
                #expect(Set(runs.map(\.stdout)).count == 1, "round \(round): every process prints the same token")
                #expect(dev.faults.count("token.refresh_token") == 1, "round \(round)")
            }
            let refreshed = try await a.run("refresh")
            #expect(refreshed.status == 0, "the grant is alive: \(refreshed.stderr)")
        }
    }

    @Test("the process holding the refresh lease is killed mid-refresh: another takes over, nothing silently broken")
    func killedLeaseHolder() async throws {
        try await withDevices { dev, a, _ in
            try await signInWithShortToken(dev, a)
            dev.faults.resetCounters()
            dev.faults.set(.latency(milliseconds: 1_500), for: .token)
            let holder = try await CLI.start(["--home", a.path, "token"])
            while dev.faults.count(.token) == 0 { try await Task.sleep(for: .milliseconds(10)) }
            holder.send(signal: SIGKILL)
            #expect(try await holder.finish().status == SIGKILL)
            dev.faults.clear()
            let successor = try await a.run(arguments: ["token"], environment: ["LATCHKEY_LOG": "debug"])
            #expect(successor.stderr.contains("taking over the lease of a holder that is gone"))
            // The killed request may still reach the provider after the takeover and replay the
            // old refresh token, which ends the grant. Either the account works, or it says so.
            // Once the provider has served it (or five seconds passed: it may never come):
            let served = ContinuousClock.now + .seconds(5)
            while dev.faults.count("token.refresh_token") < 2, ContinuousClock.now < served {
                try await Task.sleep(for: .milliseconds(20))
            }
            let after = try await a.run("refresh")
            switch after.status {
            case 0:
                let token = try await a.run("token")
                #expect(token.status == 0)
                #expect(try await Introspect.isActive(token.stdout, at: dev))
            case 4:
                // A rejected refresh token does not always end the access token with it (an
                // expired refresh token, say), so `token` may still hand out an unexpired one;
                // what must hold is that the account says it needs sign-in, every time.
                #expect(try await a.run("refresh").status == 4, "still reported, not silently broken")
                #expect(try await a.run("accounts").stdout.contains("must sign in again"))
            default:
                Issue.record("refresh after the takeover: exit \(after.status): \(after.stderr)")
            }
        }
    }

    @Test(
        "any ending signal while a refresh answer is on its way: the answer is stored, then the process ends by the signal",
        arguments: [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE])
    func signalDuringRefresh(_ signal: Int32) async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            dev.faults.resetCounters()
            // The provider rotates, then holds its answer 1.5 s: the signal comes while the
            // answer is on its way.
            dev.faults.set(DevProviderFault(answerDelayMilliseconds: 1_500, remaining: 1), for: .token)
            let refresh = try await CLI.start(["--home", a.path, "refresh"])
            while dev.faults.count("token.refresh_token") == 0 { try await Task.sleep(for: .milliseconds(5)) }
            refresh.send(signal: signal)
            let ended = try await refresh.finish()
            // SIGPIPE ends nothing in a process that has opened a socket: SwiftNIO ignores it
            // process-wide (Linux has no per-socket way), as the shell's pipeline would not.
            #expect(
                ended.status == signal || (signal == SIGPIPE && ended.status == 0),
                "ends by the signal: \(ended.stderr)")
            // The rotated refresh token was stored: the next refresh is not a replay.
            let next = try await a.run("refresh")
            #expect(next.status == 0, "\(next.stderr)")
            #expect(await dev.liveGrants(of: "alice") == 1)
        }
    }

    @Test(
        "Ctrl-C after the token endpoint answered a sign-in: the grant it issued is revoked, nothing is stored",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func interruptedSignIn() async throws {
        try await withDevices { dev, a, _ in
            // The provider issues the grant, then holds its answer: Ctrl-C comes meanwhile.
            dev.faults.set(DevProviderFault(answerDelayMilliseconds: 1_000, remaining: 1), for: .token)
            let login = try await ChildProcess.start(
                CLI.binary, ["--home", a.path, "login", "--username", "alice", "--password-stdin"],
                environment: CLI.environment(), input: "alice-password\n")
            while dev.faults.count("token.password") == 0 {
                try #require(!login.hasEnded, "login ended before it asked for a token")
                try await Task.sleep(for: .milliseconds(5))
            }
            login.send(signal: SIGINT)
            let ended = try await login.finish()
            #expect(ended.status == SIGINT, "ends by the signal: \(ended.stderr)")
            #expect(await dev.liveGrants(of: "alice") == 0, "the grant it got was revoked")
            let accounts = try await a.run("accounts", "--json")
            #expect(accounts.array.isEmpty, "nothing was stored: \(accounts.stdout)")
        }
    }
}
