import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("latchkey accounts, tokens and providers against the development provider")
struct CLIAccountTests: DevProviderCLITest {
    @Test("provider add, list, remove; bad input is exit 2")
    func providers() async throws {
        let device = try Device()
        defer { device.cleanUp() }
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "http://login.example.com", "--client-id",
                "x"
            )
            .status == 2)
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "x", "--endpoint",
                "bogus=https://x.example"
            ).status == 2)
        #expect(try await device.run("provider", "add", "p", "--cognito", "--client-id", "x").status == 2)
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "x", "--auth-method",
                "basic"
            ).status == 2)
        let added = try await device.run(
            arguments: [
                "provider", "add", "corp", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "cli",
                "--client-secret-stdin", "--auth-method", "post", "--scope", "openid email",
                "--endpoint", "end-session=https://login.example.com/logout",
            ],
            input: "s3cret")
        #expect(added.status == 0, "\(added.stderr)")
        let cognito = try await device.run(
            "--json", "provider", "add", "pool", "--cognito", "--region", "eu-west-1", "--user-pool-id",
            "eu-west-1_abc",
            "--client-id", "app", "--endpoint-url", "http://127.0.0.1:9")
        #expect(cognito.status == 0)
        #expect(cognito.object["name"] as? String == "pool")
        #expect(
            try await device.run(
                "provider", "add", "corp", "--allow-password-grant", "--issuer", "https://x.example", "--client-id", "y"
            ).status
                == 2)
        let list = try await device.run("provider", "list", "--json")
        #expect(list.array.map { $0["name"] as? String } == ["corp", "pool"])
        #expect(list.array.last?["issuer"] as? String == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc")
        let file = try String(contentsOfFile: device.path + "/providers.json", encoding: .utf8)
        #expect(!file.contains("s3cret"), "the client secret is sealed with the store's key")
        #expect(file.contains("sealedClientSecret"))
        let mode =
            try FileManager.default.attributesOfItem(atPath: device.path + "/providers.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await device.run("provider", "remove", "corp").status == 0)
        #expect(try await device.run("provider", "remove", "corp").status == 2)
        #expect(try await device.run("provider", "list").stdout.contains("pool"))
        // With two providers, login must name one.
        _ = try await device.run(
            "provider", "add", "other", "--allow-password-grant", "--issuer", "https://other.example", "--client-id",
            "z")
        #expect(
            try await device.run(arguments: ["login", "--username", "u", "--password-stdin"], input: "p").status == 2)
    }

    @Test("login, accounts, use, token, refresh, userinfo: the happy path and its JSON")
    func accountsAndTokens() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let bob = try await login(a, "bob", "--json")
            #expect(bob.object["isDefault"] as? Bool == false)
            let wrong = try await a.run(arguments: ["login", "--username", "alice", "--password-stdin"], input: "nope")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.hasPrefix("latchkey: "))
            #expect(try await a.run("login", "--browser", "--device").status == 2)

            let accounts = try await a.run("--json", "accounts")
            #expect(accounts.status == 0)
            #expect(accounts.array.count == 2)
            let first = try #require(accounts.array.first)
            #expect(
                Set(first.keys) == [
                    "id", "provider", "username", "email", "isDefault", "accessTokenExpiresAt", "hasRefreshToken",
                ])
            #expect(first["username"] as? String == "alice")
            #expect(first["isDefault"] as? Bool == true)
            #expect(first["provider"] as? String == "dev")
            #expect(first["hasRefreshToken"] as? Bool == true)

            #expect(try await a.run("use", "bob@example.com").status == 0)
            #expect(try await a.run("use", "carol").status == 2)
            let token = try await a.run("token")
            #expect(token.status == 0)
            let raw = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(raw.split(separator: ".").count == 3)
            #expect(!raw.contains(" "))
            let aliceToken = try await a.run("token", "alice")
            #expect(aliceToken.stdout != token.stdout)

            let refreshed = try await a.run("refresh", "--json")
            #expect(refreshed.status == 0)
            #expect(refreshed.object["accessTokenExpiresAt"] != nil)
            #expect(try await a.run("token").stdout != token.stdout)
            let userinfo = try await a.run("userinfo", "--json")
            #expect(userinfo.object["email"] as? String == "bob@example.com")
            #expect(try await a.run("userinfo").stdout.contains("preferred_username: bob"))
            #expect(dev.faults.count("token.refresh_token") == 1)
        }
    }

    @Test("revoke by type, remove is local, and errors never show a token")
    func revokeAndRemove() async throws {
        try await withDevices { _, a, _ in
            _ = try await login(a, "alice")
            let token = try await a.run("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let revoked = try await a.run("revoke", "--type", "access", "--json")
            #expect(revoked.status == 0)
            #expect((revoked.object["outcomes"] as? [String: String])?["access_token"] == "revoked")
            let again = try await a.run("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(again != token)
            #expect(try await a.run("revoke", "--type", "everything").status == 2)
            let removed = try await a.run("remove")
            #expect(removed.status == 0)
            #expect(removed.stdout.contains("stay valid on the server"))
            #expect(try await a.run("--json", "accounts").array.isEmpty)
            let none = try await a.run("token")
            #expect(none.status == 2)
            #expect(!none.stderr.contains(again))
        }
    }

    @Test("a provider with endpoints only in RFC 8414 metadata and no ID token from the password grant")
    func oauthOnlyProvider() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.omittedFromOpenIDConfiguration = ["revocation_endpoint", "introspection_endpoint"]
        configuration.passwordGrantIssuesIDToken = false
        try await withDevices(configuration) { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)
            let accounts = try await a.run("--json", "accounts")
            #expect(accounts.array.compactMap { $0["username"] as? String } == ["alice", "bob"])
            #expect(accounts.array.compactMap { $0["email"] as? String } == ["alice@example.com", "bob@example.com"])
            #expect(try await a.run("use", "bob").status == 0)
            #expect(try await a.run("token", "alice@example.com").status == 0)
            #expect(try await a.run("revoke", "alice").status == 0)
            let signout = try await a.run("signout", "bob", "--yes")
            #expect(signout.status == 0, "complete: \(signout.stdout)")
            // Offline, a sign-out queues; the queue drains through the RFC 8414 endpoints.
            #expect(try await login(a, "alice").status == 0)
            dev.faults.isOffline = true
            #expect(try await a.run("signout", "alice", "--yes").status == 3)
            dev.faults.isOffline = false
            let retry = try await a.run("outbox", "retry")
            #expect(retry.status == 0, "\(retry.stdout) \(retry.stderr)")
            #expect(try await a.run("--json", "outbox").array.isEmpty)
        }
    }

    @Test("a damaged row is listed by id with exit 1 while every healthy account and entry keeps working")
    func damagedRows() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)
            let alice = try #require(try await a.run("--json", "accounts").array.first?["id"] as? String)
            let database = a.path + "/credentials.sqlite"
            let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
            let damage = try await ChildProcess.run(
                sqlite3, [database, "UPDATE credential SET sealed_token = x'00' WHERE id = '\(alice)'"])
            try #require(damage.status == 0, "\(damage.stderr)")

            let accounts = try await a.run("accounts")
            #expect(accounts.status == 1)
            #expect(accounts.stdout.contains("damaged account \(alice)"))
            #expect(accounts.stdout.contains("bob"))
            #expect(try await a.run("token", "bob").status == 0)
            #expect(try await a.run("signout", "bob", "--yes").status == 0)

            // The outbox: one queued sign-out, one of its rows damaged.
            #expect(try await login(a, "bob").status == 0)
            dev.faults.isOffline = true
            #expect(try await a.run("signout", "bob", "--yes").status == 3)
            dev.faults.isOffline = false
            let entries = try await a.run("--json", "outbox").array
            let victim = try #require(entries.first?["id"] as? String)
            let edit = try await ChildProcess.run(
                sqlite3, [database, "UPDATE outbox SET client_id = 'someone-else' WHERE id = '\(victim)'"])
            try #require(edit.status == 0, "\(edit.stderr)")
            let retry = try await a.run("outbox", "retry")
            #expect(retry.status == 1, "damaged rows need a person: \(retry.stdout)")
            #expect(retry.stdout.contains("sent \(entries.count - 1)"))
            let list = try await a.run("outbox")
            #expect(list.status == 1)
            #expect(list.stdout.contains("damaged entry \(victim)"))
            #expect(try await a.run("outbox", "drop", victim).status == 0)
            #expect(try await a.run("outbox", "drop", victim).status == 2)
            #expect(try await a.run("outbox").status == 0)
            #expect(try await a.run("remove", alice).status == 0)
            #expect(try await a.run("accounts").status == 0)

            // A damaged default marker is reported as damaged, never as "No default account".
            #expect(try await login(a, "bob").status == 0)
            let marker = try await ChildProcess.run(
                sqlite3, [database, "UPDATE setting SET value = x'00' WHERE name = 'default_credential'"])
            try #require(marker.status == 0, "\(marker.stderr)")
            for command in [["token"], ["refresh"], ["signout", "--yes"]] {
                let run = try await a.run(arguments: command)
                #expect(run.status == 1, "\(command): \(run.stderr)")
                #expect(run.stderr.contains("default-account marker cannot be read"), "\(command): \(run.stderr)")
                #expect(!run.stderr.contains("No default account"), "\(command)")
            }
            #expect(try await a.run("use", "bob").status == 0, "choosing the default again mends it")
            #expect(try await a.run("token").status == 0)
        }
    }

    @Test("an older copy of an account's whole row put back is reported as damaged; its old token is never handed out")
    func rolledBackRow() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let database = a.path + "/credentials.sqlite"
            let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
            let old = try #require(try await a.run("token").stdout.split(separator: "\n").first.map(String.init))
            let copy = try await ChildProcess.run(sqlite3, [database, "CREATE TABLE copy AS SELECT * FROM credential"])
            try #require(copy.status == 0, "\(copy.stderr)")
            #expect(try await a.run("refresh").status == 0)
            #expect(try await a.run("refresh").status == 0)
            let putBack = try await ChildProcess.run(
                sqlite3, [database, "DELETE FROM credential; INSERT INTO credential SELECT * FROM copy"])
            try #require(putBack.status == 0, "\(putBack.stderr)")
            for command in [["token"], ["token", "alice"], ["refresh"], ["userinfo"]] {
                let run = try await a.run(arguments: command)
                #expect(run.status == 1, "\(command): \(run.stdout) \(run.stderr)")
                #expect(run.stderr.contains("an older copy was put back"), "\(command): \(run.stderr)")
                #expect(!run.stdout.contains(old), "\(command)")
            }
            #expect(dev.faults.count("token.refresh_token") == 2, "the old refresh token was never sent")
            let accounts = try await a.run("accounts")
            #expect(accounts.status == 1)
            #expect(accounts.stdout.contains("damaged account"))
        }
    }

    @Test("login with a password needs a provider added with --allow-password-grant")
    func passwordGrantNeedsOptIn() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        #expect(
            try await device.run(
                "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli"
            )
            .status == 0)
        let refused = try await device.run(
            arguments: ["login", "--username", "alice", "--password-stdin"], input: "alice-password")
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--allow-password-grant"))
        #expect(dev.faults.count("token.password") == 0)
        await dev.stop()
    }
}
