import Foundation
import LatchkeyCommandLine
import LatchkeyDevProvider
import LatchkeyRecords
import LatchkeyTestSupport
import Testing

/// One account per command: `--account`, ACCOUNT, `LATCHKEY_ACCOUNT` and git's username pick
/// the account of one command, in both halves of the tool, and never change the default.
@Suite("Choosing the account of one command", .serialized)
struct CLIAccountSelectionTests: DevProviderCLITest {
    /// A device with alice (the default) and bob, whose provider answers git for git.example.com.
    func withTwoAccounts(_ body: (DevProvider, Device) async throws -> Void) async throws {
        try await withDevices { dev, a, _ in
            try await answerGit(for: "git.example.com", dev, on: a)
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)
            #expect(try await a.run("use", "alice").status == 0)
            try await body(dev, a)
        }
    }

    func defaultUsername(_ device: Device) async throws -> String? {
        let accounts = try await device.run("--json", "accounts")
        return accounts.array.first { $0["isDefault"] as? Bool == true }?["username"] as? String
    }

    func subject(of token: String) throws -> String? {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        let payload = try #require(parts.count > 1 ? String(parts[1]) : nil)
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let claims = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: base64)))
        return (claims as? [String: Any])?["preferred_username"] as? String
            ?? (claims as? [String: Any])?["username"] as? String
    }

    @Test("token, userinfo and refresh take --account or LATCHKEY_ACCOUNT; the quick path too; the default stays")
    func perCommand() async throws {
        try await withTwoAccounts { _, a in
            let front = try CLIQuickTests.LoneFront()
            defer { front.folder.cleanUp() }
            let bob = ["LATCHKEY_ACCOUNT": "bob"]
            let alicesToken = try await a.run("token").stdout
            for run in [
                try await a.run("token", "--account", "bob"),
                try await a.run(arguments: ["token"], environment: bob),
                try await front.run(a, ["token", "--account", "bob"]),
                try await front.run(a, ["token"], environment: bob),
            ] {
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout != alicesToken, "bob's token, not the default's")
            }
            #expect(
                try await a.run("token", "--account", "bob").stdout
                    == (try await front.run(a, ["token"], environment: bob)).stdout)
            // The command line wins over the environment.
            #expect(try await a.run(arguments: ["token", "alice"], environment: bob).stdout == alicesToken)
            let info = try await a.run(arguments: ["--json", "userinfo"], environment: bob)
            #expect(info.object["preferred_username"] as? String == "bob", "\(info.stdout)")
            #expect(try await a.run("refresh", "--account", "bob").stdout.contains("bob"))
            #expect(try await defaultUsername(a) == "alice", "naming an account never changes the default")

            let both = try await a.run("token", "alice", "--account", "bob")
            #expect(both.status == 2)
            #expect(both.stderr.contains("Name the account once"))
            let unknown = try await a.run(arguments: ["token"], environment: ["LATCHKEY_ACCOUNT": "carol"])
            #expect(unknown.status == 2)
            #expect(unknown.stderr.contains("No account matches carol"))
        }
    }

    @Test("git: the username git sends picks the account (credential.<url>.username); one that names none is git's own")
    func gitUsername() async throws {
        try await withTwoAccounts { _, a in
            let front = try CLIQuickTests.LoneFront()
            defer { front.folder.cleanUp() }
            func get(_ extra: String, environment: [String: String] = [:], quick: Bool) async throws -> CLI.Run {
                let request = "protocol=https\nhost=git.example.com\n\(extra)\n"
                return quick
                    ? try await front.run(a, ["credential", "git", "get"], input: request, environment: environment)
                    : try await a.run(
                        arguments: ["credential", "git", "get"], input: request, environment: environment)
            }
            for quick in [true, false] {
                #expect(try await get("username=bob\n", quick: quick).stdout.hasPrefix("username=bob\n"), "\(quick)")
                #expect(try await get("", quick: quick).stdout.hasPrefix("username=alice\n"), "\(quick)")
                #expect(
                    try await get("username=oauth2\n", quick: quick).stdout.hasPrefix("username=alice\n"), "\(quick)")
                #expect(
                    try await get("", environment: ["LATCHKEY_ACCOUNT": "bob"], quick: quick).stdout.hasPrefix(
                        "username=bob\n"), "\(quick)")
            }
            #expect(try await defaultUsername(a) == "alice")
        }
    }
}

/// The git account choice as a pure value.
@Suite("Which account answers git")
struct AccountChoiceTests {
    func account(_ name: String) -> AccountSummary {
        AccountSummary(
            id: CredentialID(rawValue: name + "-id"),
            metadata: CredentialMetadata(
                subject: name, preferredUsername: name, issuer: "https://idp.example", clientID: "c"),
            accessTokenExpiresAt: nil, hasAccessToken: true, hasRefreshToken: true, createdAt: Date())
    }

    @Test("git's username, when it names one; else the named one; else the default; else the only one")
    func order() throws {
        let (alice, bob) = (account("alice"), account("bob"))
        let both = [alice, bob]
        #expect(
            try AccountChoice.gitAccount(among: both, gitUsername: "bob", named: "alice", default: alice.id).get()
                == bob)
        #expect(
            try AccountChoice.gitAccount(among: both, gitUsername: "oauth2", named: nil, default: alice.id).get()
                == alice)
        #expect(
            try AccountChoice.gitAccount(among: both, gitUsername: nil, named: "bob", default: alice.id).get() == bob)
        #expect(
            try AccountChoice.gitAccount(among: [bob], gitUsername: nil, named: nil, default: alice.id).get() == bob)
        #expect(
            AccountChoice.gitAccount(among: both, gitUsername: nil, named: nil, default: nil)
                == .failure(.several))
        #expect(
            AccountChoice.gitAccount(among: both, gitUsername: nil, named: "carol", default: alice.id)
                == .failure(.none(named: "carol")))
        #expect(
            AccountChoice.gitAccount(among: [], gitUsername: nil, named: nil, default: nil)
                == .failure(.none(named: nil)))
    }

    @Test("the command's own argument wins over LATCHKEY_ACCOUNT; an empty variable is none")
    func reference() {
        #expect(AccountChoice.reference("alice", environment: ["LATCHKEY_ACCOUNT": "bob"]) == "alice")
        #expect(AccountChoice.reference(nil, environment: ["LATCHKEY_ACCOUNT": "bob"]) == "bob")
        #expect(AccountChoice.reference(nil, environment: ["LATCHKEY_ACCOUNT": ""]) == nil)
    }
}
