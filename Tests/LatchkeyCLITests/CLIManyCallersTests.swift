import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A build system's worth of callers: 128 `latchkey token` processes started together on one
/// SQLite store, against a provider that rotates refresh tokens and revokes the grant when an
/// old one comes back.
@Suite("128 latchkey processes at once", .serialized)
struct CLIManyCallersTests: DevProviderCLITest {
    /// 128; 32 under the thread sanitizer (`LATCHKEY_TEST_SLOWDOWN` 4), whose processes each
    /// hold several times the memory: 128 of them at once would not fit a CI machine.
    static let callers = TestTiming.slowdown >= 4 ? 32 : 128

    @Test("on an expired token: exactly one refresh, every process prints the same new token, none fails")
    func expiredToken() async throws {
        try await withDevices { dev, a, _ in
            #expect(dev.configuration.rotateRefreshTokens && dev.configuration.revokesGrantOnRefreshReplay)
            try await signInWithShortToken(dev, a)
            dev.faults.resetCounters()
            let runs = try await AsyncGate.fanOut.run { try await a.runTogether(Self.callers, ["token"]) }
            for run in runs {
                #expect(run.status == 0, "\(run.stderr)")
                #expect(!run.stderr.contains("locked"), "\(run.stderr)")
            }
            #expect(Set(runs.map(\.stdout)).count == 1, "every process prints the same token")
            #expect(dev.faults.count("token.refresh_token") == 1, "one refresh for all of them")
            let token = try #require(runs.first?.stdout)
            #expect(try await Introspect.isActive(token, at: dev), "the new token is live")
            #expect(try await a.run("refresh").status == 0, "no replay: the grant is alive")
        }
    }

    @Test("on a valid token: all answered by the quick path alone (no latchkey-full beside it), no request")
    func validToken() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let front = try CLIQuickTests.LoneFront()
            defer { front.folder.cleanUp() }
            dev.faults.resetCounters()
            let runs = try await withThrowingTaskGroup { group in
                for _ in 0..<Self.callers { group.addTask { try await front.run(a, ["token"]) } }
                return try await group.reduce(into: [CLI.Run]()) { $0.append($1) }
            }
            for run in runs { #expect(run.status == 0, "\(run.stderr)") }
            #expect(Set(runs.map(\.stdout)).count == 1)
            #expect(dev.faults.count(.token) == 0, "nothing was sent")
        }
    }
}
