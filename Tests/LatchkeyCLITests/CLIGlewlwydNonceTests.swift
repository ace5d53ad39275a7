import Foundation
import LatchkeyTestSupport
import Testing

/// DPoP nonces under load, through the built binary, at the Glewlwyd `scripts/providers/glewlwyd`
/// starts: nonces mandatory, one per client for every process, rotating as they are used.
@Suite(
    "latchkey api at Glewlwyd with rotating DPoP nonces",
    .enabled(if: providersRequired || providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV") != nil))
struct CLIGlewlwydNonceTests {
    /// Runs in a row: each is 8, then 32 `api` processes at once, then 8 `token --force`. The
    /// plain pass runs five (240 processes, each nonce taken by several at once); the slower trace
    /// and sanitizer passes, which look for leaks and races rather than for the odds of a
    /// collision, run two. It holds Glewlwyd's gate throughout, and every Glewlwyd test waiting
    /// at the gate holds one of the suite's eight places: twenty rounds (two minutes) stalled the
    /// whole suite behind it.
    static let rounds = TestTiming.slowdown > 1 ? 2 : 5

    @Test("8 and 32 `latchkey api` processes at once, and 8 `token --force`: every call succeeds, round after round")
    func underLoad() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try #require(
                providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
            let issuer = try #require(environment["issuer"] as? String)
            let a = try Device()
            defer { a.cleanUp() }
            let added = try await a.run(
                arguments: [
                    "provider", "add", "glewlwyd", "--dpop", "--allow-password-grant", "--issuer", issuer,
                    "--client-id", "latchkey-confidential", "--client-secret-stdin", "--auth-method", "basic",
                ],
                input: "latchkey-confidential-secret")
            #expect(added.status == 0, "\(added.stderr)")
            let login = try await a.run(
                arguments: ["login", "--username", "alice", "--password-stdin"], input: "alice-password")
            try #require(login.status == 0, "\(login.stderr)")
            let userinfo = issuer + "/userinfo"
            let debug = ["LATCHKEY_LOG": "debug"]
            func lines(_ runs: [CLI.Run], ending suffix: String) -> Int {
                runs.flatMap { $0.stderr.split(separator: "\n") }.filter { $0.contains(suffix) }.count
            }
            var retries: [Int: [Int]] = [8: [], 32: []]
            var refreshes: [Int] = []
            for round in 1...Self.rounds {
                for count in [8, 32] {
                    let runs = try await a.runTogether(count, ["api", userinfo], environment: debug)
                    for run in runs {
                        #expect(run.status == 0, "round \(round), \(count) at once: \(run.stderr)")
                        #expect(run.stdout.contains("\"sub\""), "round \(round): \(run.stdout)")
                    }
                    retries[count, default: []].append(lines(runs, ending: "asked for a newer DPoP nonce"))
                }
                let forced = try await a.runTogether(8, ["token", "--force"], environment: debug)
                for run in forced { #expect(run.status == 0, "round \(round), token --force: \(run.stderr)") }
                refreshes.append(lines(forced, ending: "] refreshing"))
            }
            #expect(refreshes.allSatisfy { $0 == 1 }, "one refresh for each round's 8 processes: \(refreshes)")
            print(
                "DPoP nonce retries per round at Glewlwyd, 8 processes: \(retries[8] ?? []); 32 processes: \(retries[32] ?? []); refreshes per 8 token --force: \(refreshes)"
            )
        }
    }
}
