import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// No command ends with a status other than 0 without a line on standard error that says why,
/// and `latchkey api` tells an HTTP error from an unreachable server from a sign-in to redo.
@Suite("latchkey: every failure says why")
struct CLIExitMessageTests: DevProviderCLITest {
    @Test("every subcommand's error paths: a status other than 0 always comes with a message on stderr")
    func everyFailureSaysWhy() async throws {
        try await withDevices { dev, a, b in
            let userinfo = dev.url(.userinfo).absoluteString
            let closed = "http://127.0.0.1:\(try await FreePort.pick())/"
            // A home with the provider and nobody signed in.
            var failures: [([String], CLI.Run)] = []
            func attempt(_ device: Device, _ arguments: [String], input: String? = nil) async throws {
                let run = try await device.run(arguments: arguments, input: input)
                if run.status != 0 { failures.append((arguments, run)) }
            }
            for arguments in [
                ["token"], ["token", "nobody"], ["refresh"], ["userinfo"], ["api", userinfo],
                ["proof", "GET", userinfo],
                ["status"], ["use", "nobody"], ["revoke"], ["remove", "nobody"], ["signout", "--yes"],
                ["provider", "remove", "nobody"], ["provider", "refresh", "nobody"], ["outbox", "drop", "nobody"],
                ["login", "--provider", "nobody"], ["key", "move", "--to", "file", "/nonexistent/dir/key"],
                ["credential", "kubectl"], ["api", "not a url"], ["token", "--format", "nonsense"],
            ] {
                try await attempt(b, arguments)
            }
            try await attempt(b, ["credential", "git", "get"], input: "protocol=https\nhost=nowhere.example\n")

            // Signed in, then the provider goes away, and answers with errors.
            #expect(try await login(a, "alice").status == 0)
            dev.faults.isOffline = true
            for arguments in [["refresh"], ["signout", "--yes"]] { try await attempt(a, arguments) }
            dev.faults.isOffline = false
            #expect(try await login(a, "alice").status == 0)
            for arguments in [
                ["api", closed], ["api", "-X", "DELETE", userinfo], ["api", dev.issuer.absoluteString + "/nothing"],
            ] {
                try await attempt(a, arguments)
            }
            #expect(failures.count >= 20, "the error paths failed: \(failures.map(\.0))")
            for (arguments, run) in failures {
                #expect(
                    !run.stderr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                    "\(arguments) exited \(run.status) without a word on stderr")
            }
        }
    }

    @Test("latchkey api: an HTTP error is exit 1 with the status and the server's reason, an unreachable server exit 5")
    func apiSaysWhy() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let userinfo = dev.url(.userinfo).absoluteString

            dev.faults.set(DevProviderFault(status: 503, retryAfter: 7, remaining: 1), for: .userinfo)
            let busy = try await a.run("api", userinfo)
            #expect(busy.status == 1)
            #expect(busy.stderr.contains("HTTP 503"), "\(busy.stderr)")
            #expect(busy.stderr.contains("try again after 7 s"), "\(busy.stderr)")
            #expect(busy.stdout.contains("temporarily_unavailable"), "the body is printed as it came")

            dev.faults.set(
                DevProviderFault(
                    status: 403, wwwAuthenticate: #"Bearer error="insufficient_scope", scope="files.write""#,
                    remaining: 1), for: .userinfo)
            let scope = try await a.run("api", userinfo)
            #expect(scope.status == 1)
            #expect(scope.stderr.contains("HTTP 403"))
            #expect(scope.stderr.contains("insufficient_scope"), "\(scope.stderr)")
            #expect(scope.stderr.contains("files.write"), "\(scope.stderr)")

            // A token the server keeps refusing, even after the refresh it leads to.
            dev.faults.set(
                DevProviderFault(status: 401, wwwAuthenticate: #"Bearer error="invalid_token""#, remaining: 2),
                for: .userinfo)
            let refused = try await a.run("api", userinfo)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("HTTP 401"))
            #expect(refused.stderr.contains("invalid_token"))
            #expect(refused.stderr.contains("--resource"), "\(refused.stderr)")

            let unreachable = try await a.run("api", "http://127.0.0.1:\(try await FreePort.pick())/")
            #expect(unreachable.status == 5, "\(unreachable.stderr)")
            #expect(unreachable.stderr.contains("did not answer"), "\(unreachable.stderr)")

            let help = try await a.run("api", "--help")
            #expect(help.stdout.contains("Exit status"))
            #expect(help.stdout.contains("5 the server"), "\(help.stdout)")
        }
    }
}
