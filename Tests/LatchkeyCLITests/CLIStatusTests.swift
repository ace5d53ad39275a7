import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey status` and `latchkey --version`.
@Suite("latchkey status")
struct CLIStatusTests {
    @Test("--version prints the version and exits 0")
    func version() async throws {
        let run = try await CLI.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("0."))
    }

    @Test(
        "status shows each account's tokens offline, checks with the provider on --check, and exits 4 when one must sign in"
    )
    func status() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let (a, b) = (try Device(), try Device())
        defer {
            a.cleanUp()
            b.cleanUp()
        }
        for device in [a, b] {
            let added = try await device.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
        }
        // A's access token has expired when it is issued: the check must refresh.
        await dev.setAccessTokenLifetime(0)
        #expect(
            try await a.run("login", "--username", "alice", "--password-stdin", input: "alice-password").status == 0)
        await dev.setAccessTokenLifetime(3_600)

        dev.faults.resetCounters()
        let offline = try await a.run("status")
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stdout.contains("* alice (dev, "))
        #expect(offline.stdout.contains("refresh token: held"))
        #expect(offline.stdout.contains("Outbox: empty."))
        #expect(dev.faults.counters.isEmpty, "no network call without --check")

        let json = try await a.run("status", "--json")
        let account = try #require((json.object["accounts"] as? [[String: Any]])?.first)
        #expect(account["accessTokenValid"] as? Bool == false)
        #expect(account["hasRefreshToken"] as? Bool == true)
        #expect(account["needsSignIn"] as? Bool == false)
        #expect((json.object["outbox"] as? [String: Any])?["entries"] as? Int == 0)

        let checked = try await a.run("status", "--check", "--json")
        #expect(checked.status == 0, "\(checked.stderr)")
        let fresh = try #require((checked.object["accounts"] as? [[String: Any]])?.first)
        #expect(fresh["checked"] as? String == "ok")
        #expect(fresh["accessTokenValid"] as? Bool == true)

        // Alice signs out everywhere from B: A's tokens are dead at the provider.
        #expect(
            try await b.run("login", "--username", "alice", "--password-stdin", input: "alice-password").status == 0)
        #expect(try await b.run("signout", "--global", "--yes").status == 0)
        // Without --check, A cannot know yet.
        #expect(try await a.run("status").status == 0)
        let dead = try await a.run("status", "--check")
        #expect(dead.status == 4)
        #expect(dead.stdout.contains("must sign in again"))
        // Now it is remembered, without the network.
        let remembered = try await a.run("status")
        #expect(remembered.status == 4)
        #expect(remembered.stdout.contains("must sign in again"))
        await dev.stop()
    }
}
