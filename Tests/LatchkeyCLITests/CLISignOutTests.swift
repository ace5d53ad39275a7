import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("latchkey signout against the development provider")
struct CLISignOutTests: DevProviderCLITest {
    @Test("signout: refuses without a terminal, complete (0), partial and queued (3), still signed in (1)")
    func signOut() async throws {
        try await withDevices { dev, a, _ in
            _ = try await login(a, "alice")
            _ = try await login(a, "bob")
            let refused = try await a.run("signout")
            #expect(refused.status == 2)
            #expect(try await a.run("--json", "accounts").array.count == 2)

            let complete = try await a.run("signout", "alice", "--yes", "--json")
            #expect(complete.status == 0)
            #expect(complete.object["outcome"] as? String == "complete")
            #expect(complete.object["signedOutLocally"] as? Bool == true)
            let steps = try #require(complete.object["steps"] as? [[String: Any]])
            #expect(steps.allSatisfy { Set($0.keys) == ["account", "step", "status", "error", "retryable"] })
            #expect(steps.map { $0["step"] as? String }.contains("local-removal"))

            dev.faults.isOffline = true
            let strict = try await a.run("signout", "bob", "--yes", "--policy", "server-first", "--global", "--json")
            #expect(strict.status == 1)
            #expect(strict.object["outcome"] as? String == "failed")
            #expect(strict.object["signedOutLocally"] as? Bool == false)
            let partial = try await a.run("signout", "bob", "--yes", "--json")
            #expect(partial.status == 3)
            #expect(partial.object["outcome"] as? String == "partial")
            let queued = (partial.object["steps"] as? [[String: Any]] ?? []).filter {
                $0["status"] as? String == "queued"
            }
            #expect(queued.count == 2)
            #expect(queued.allSatisfy { $0["retryable"] as? Bool == true && $0["error"] is String })

            let outbox = try await a.run("outbox", "--json")
            #expect(outbox.array.count == 2)
            #expect(try await a.run("outbox", "retry").status == 1)
            dev.faults.isOffline = false
            let retried = try await a.run("outbox", "retry", "--json")
            #expect(retried.status == 0)
            #expect(retried.object["revoked"] as? Int == 2)
            #expect(try await a.run("outbox").stdout.contains("empty"))
        }
    }

    @Test("signout --global on device A: device B must sign in again (exit 4); a local signout leaves B alone")
    func twoDevices() async throws {
        try await withDevices { _, a, b in
            _ = try await login(a, "alice")
            _ = try await login(b, "alice")
            #expect(try await a.run("signout", "--yes").status == 0)
            #expect(try await b.run("userinfo").status == 0)
            _ = try await login(a, "alice")
            let global = try await a.run("signout", "--global", "--json")
            #expect(global.status == 0)
            let globalStep = (global.object["steps"] as? [[String: Any]] ?? []).first {
                $0["step"] as? String == "global-signout"
            }
            #expect(globalStep?["status"] as? String == "succeeded")
            let rejected = try await b.run("refresh")
            #expect(rejected.status == 4)
            #expect(rejected.stderr.contains("sign in again"))
            #expect(try await b.run("--json", "accounts").array.count == 1)  // nothing deleted behind the user's back
        }
    }

    @Test("signout on a terminal asks: Cancel changes nothing, 'this device' signs out")
    func interactiveSignOut() async throws {
        try await withDevices { _, a, _ in
            _ = try await login(a, "alice")
            // script(1) gives the command a terminal; the answer comes on its standard input.
            func ask(_ answer: String) async throws -> CLI.Run {
                let command = "'\(CLI.binary.path)' --home '\(a.path)' signout"
                let script = try await ChildProcess.start(
                    URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                    environment: CLI.environment())
                // Answer once the question is on the terminal.
                _ = try await script.standardOutput { $0.contains("Choose [1-3]") }
                script.write("\(answer)\n")
                return CLI.Run(try await script.finish())
            }
            let cancelled = try await ask("3")
            #expect(cancelled.stdout.contains("Sign out on ALL devices"))
            #expect(cancelled.stdout.contains("Cancelled; nothing changed."))
            #expect(cancelled.status == 0)
            #expect(try await a.run("--json", "accounts").array.count == 1)
            let signedOut = try await ask("1")
            #expect(signedOut.status == 0)
            #expect(signedOut.stdout.contains("Signed out."))
            #expect(try await a.run("--json", "accounts").array.isEmpty)
        }
    }

    @Test(
        "an entry that failed for good is sent again when asked (--include-failed) or when its provider is added back")
    func failedForGood() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            // A firewall answers the revocation with 403: a failure a retry cannot fix, as far
            // as Latchkey can tell.
            dev.faults.set(.status(403), for: .revocation)
            #expect(try await a.run("signout", "--yes").status == 3)
            dev.faults.clear()
            dev.faults.resetCounters()
            #expect(try await a.run("outbox", "retry").status == 1)
            #expect(dev.faults.count(.revocation) == 0, "never sent again on its own")
            let list = try await a.run("outbox")
            #expect(list.stdout.contains("failed for good"), "\(list.stdout)")
            #expect(list.stdout.contains("--include-failed"))
            let retried = try await a.run("outbox", "retry", "--include-failed")
            #expect(retried.status == 0, "\(retried.stdout)\(retried.stderr)")
            #expect(dev.faults.count(.revocation) > 0)
            #expect(try await a.run("--json", "outbox").array.isEmpty)

            // Its provider removed: the entry fails for want of one, and goes once it is back.
            #expect(try await login(a, "alice").status == 0)
            dev.faults.isOffline = true
            #expect(try await a.run("signout", "--yes").status == 3)
            dev.faults.isOffline = false
            #expect(try await a.run("provider", "remove", "dev").status == 0)
            #expect(try await a.run("outbox", "retry").status == 1)
            #expect(try await a.run("--json", "outbox").array.first?["failedPermanently"] as? Bool == true)
            let added = try await a.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.contains("will be tried again"), "\(added.stdout)")
            #expect(try await a.run("outbox", "retry").status == 0)
            #expect(try await a.run("--json", "outbox").array.isEmpty)
        }
    }
}
