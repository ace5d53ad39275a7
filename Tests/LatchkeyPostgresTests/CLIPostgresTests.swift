import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// `latchkey --store postgres://…`: instances on other machines (here, other homes) share the
/// providers and the accounts, and every failure to open is a clear error that loses nothing.
@Suite("latchkey with a PostgreSQL store", .enabled(if: PostgresServer.isEnabled))
struct CLIPostgresTests {
    struct Instance {
        let home: TemporaryFolder
        let environment: [String: String]

        init(_ extra: [String: String]) throws {
            home = try TemporaryFolder()
            var environment = ProcessInfo.processInfo.environment
            environment["LATCHKEY_HOME"] = home.path
            environment["LATCHKEY_DATABASE_URL"] = nil
            environment["LATCHKEY_KEY_FILE"] = nil
            // The tool's wait for its store, stretched with the suite under the thread sanitizer.
            environment["LATCHKEY_DATABASE_TIMEOUT"] = "\(5 * TestTiming.slowdown)"
            self.environment = environment.merging(extra) { _, new in new }
        }

        func run(_ arguments: [String], input: String = "", environment extra: [String: String] = [:]) async throws
            -> ChildProcess.Result
        {
            try await ChildProcess.run(
                Executables.latchkey, arguments, environment: environment.merging(extra) { _, new in new },
                input: input)
        }
    }

    @Test("every instance sees the providers and accounts another added, and a sign-out anywhere")
    func sharedStore() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let url = try await PostgresServer.freshDatabase()
        let key = try KeyFile()
        // A: --store on the command line; B: LATCHKEY_DATABASE_URL.
        let a = try Instance(["LATCHKEY_KEY_FILE": key.path])
        let b = try Instance(["LATCHKEY_KEY_FILE": key.path, "LATCHKEY_DATABASE_URL": url])
        let added = try await a.run([
            "--store", url, "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id",
            "latchkey-cli", "--allow-password-grant",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let login = try await a.run(
            ["--store", url, "login", "--provider", "dev", "--username", "alice", "--password-stdin"],
            input: "alice-password\n")
        #expect(login.status == 0, "\(login.stderr)")

        let providers = try await b.run(["provider", "list"])
        #expect(providers.stdout.contains("dev\topenid\t\(dev.issuer.absoluteString)"), "\(providers.stderr)")
        let accounts = try await b.run(["accounts"])
        #expect(accounts.stdout.contains("alice@example.com"), "\(accounts.stderr)")
        let token = try await b.run(["token", "alice"])
        #expect(token.status == 0 && token.stdout.hasPrefix("ey"), "\(token.stderr)")
        // Nothing of the store is in either home.
        for instance in [a, b] {
            #expect(!FileManager.default.fileExists(atPath: instance.home.file("credentials.sqlite")))
            #expect(!FileManager.default.fileExists(atPath: instance.home.file("providers.json")))
        }

        let signOut = try await b.run(["signout", "alice", "--yes"])
        #expect(signOut.status == 0, "\(signOut.stderr)")
        let after = try await a.run(["--store", url, "accounts"])
        #expect(after.stdout.contains("No accounts"), "\(after.stdout)")
        await dev.stop()
    }

    @Test("no key, a wrong key, an unreachable server and a newer schema are each a clear error")
    func clearErrors() async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = try KeyFile()
        let instance = try Instance(["LATCHKEY_DATABASE_URL": url])
        let first = try await instance.run(["accounts"], environment: ["LATCHKEY_KEY_FILE": key.path])
        #expect(first.status == 0, "\(first.stderr)")
        // A wait that is no number (or none a Duration holds) is the default wait, not a crash.
        for value in ["inf", "nan", "-1", "1e400", "9.3e18", "5s"] {
            let odd = try await instance.run(
                ["accounts"], environment: ["LATCHKEY_KEY_FILE": key.path, "LATCHKEY_DATABASE_TIMEOUT": value])
            #expect(odd.status == 0, "LATCHKEY_DATABASE_TIMEOUT=\(value): \(odd.stderr)")
        }

        let noKey = try await instance.run(["accounts"])
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("LATCHKEY_KEY_FILE"))
        #expect(noKey.stderr.contains("latchkey key generate"))

        let other = try KeyFile()
        let wrongKey = try await instance.run(["accounts"], environment: ["LATCHKEY_KEY_FILE": other.path])
        #expect(wrongKey.status == 1)
        #expect(wrongKey.stderr.contains("not the key of this PostgreSQL store"), "\(wrongKey.stderr)")

        let unreachable = try await instance.run(
            ["--store", "postgres://latchkey@127.0.0.1:1/latchkey", "accounts"],
            environment: ["LATCHKEY_KEY_FILE": key.path])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("could not be opened"), "\(unreachable.stderr)")

        try await PostgresServer.withClient(url) { client in
            try await client.query("UPDATE latchkey_schema SET version = 9")
        }
        let newer = try await instance.run(["accounts"], environment: ["LATCHKEY_KEY_FILE": key.path])
        #expect(newer.status == 1)
        #expect(newer.stderr.contains("schema version 9"), "\(newer.stderr)")

        let rotate = try await instance.run(["key", "rotate"], environment: ["LATCHKEY_KEY_FILE": key.path])
        #expect(rotate.status == 2)
        #expect(rotate.stderr.contains("SQLite"))
    }
}
