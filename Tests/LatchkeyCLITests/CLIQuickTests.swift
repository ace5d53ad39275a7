import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `latchkey` answers `token`, `credential git get` and `credential kubectl` itself when the
/// token is valid, and hands everything else to `latchkey-full`. A copy of `latchkey` alone in a
/// folder of its own cannot hand over: what it answers, it answered itself, and it must answer
/// exactly what the full tool answers.
///
/// One test at a time: each starts dozens of processes, and the suite runs beside every other.
@Suite("latchkey's quick answers", .serialized)
struct CLIQuickTests: DevProviderCLITest {
    /// `latchkey` alone in a folder: no `latchkey-full` beside it. A hard link (the executable
    /// finds its folder by the path it was started by), or a copy on another file system.
    struct LoneFront {
        let folder: TemporaryFolder
        let binary: URL

        init() throws {
            folder = try TemporaryFolder()
            binary = URL(fileURLWithPath: folder.file("latchkey"))
            if link(Executables.latchkey.path, binary.path) != 0 {
                try FileManager.default.copyItem(at: Executables.latchkey, to: binary)
            }
        }

        func run(_ device: Device, _ arguments: [String], input: String = "", environment: [String: String] = [:])
            async throws -> CLI.Run
        {
            CLI.Run(
                try await ChildProcess.run(
                    binary, ["--home", device.path] + arguments, environment: CLI.environment(environment),
                    input: input))
        }
    }

    /// The full tool itself, with the same arguments.
    func full(_ device: Device, _ arguments: [String], input: String = "", environment: [String: String] = [:])
        async throws -> CLI.Run
    {
        CLI.Run(
            try await ChildProcess.run(
                Executables.url("latchkey-full"), ["--home", device.path] + arguments,
                environment: CLI.environment(environment), input: input))
    }

    @Test("a valid token is printed in every format exactly as the full tool prints it, with no refresh")
    func tokenFormats() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            dev.faults.resetCounters()
            let cases: [[String]] = [
                ["token"], ["token", "alice"], ["token", "alice@example.com"], ["token", "--json"],
                ["token", "--format", "json"], ["token", "--format=export"], ["token", "--id-token"],
                ["token", "--id-token", "--format", "json"], ["token", "--min-validity", "2m"],
                ["--json", "token", "--format", "json"], ["token", "--format", "headers"],
            ]
            for arguments in cases {
                let quick = try await front.run(a, arguments)
                #expect(quick.status == 0, "\(arguments): \(quick.stderr)")
                #expect(!quick.stdout.isEmpty, "\(arguments)")
                let whole = try await full(a, arguments)
                #expect(quick.stdout == whole.stdout, "\(arguments)")
                #expect(quick.stderr == whole.stderr, "\(arguments)")
            }
            #expect(dev.faults.count("token.refresh_token") == 0)
        }
    }

    @Test("git's get and kubectl's exec credential are answered as the full tool answers them")
    func helpers() async throws {
        try await withDevices { dev, a, _ in
            try await answerGit(for: "git.example.com", dev, on: a)
            #expect(try await login(a, "alice").status == 0)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            dev.faults.resetCounters()
            let get = try await front.run(
                a, ["credential", "git", "get"], input: "protocol=https\nhost=git.example.com\n\n")
            #expect(get.status == 0, "\(get.stderr)")
            #expect(get.stdout.hasPrefix("username=alice\npassword=ey"))
            #expect(get.stdout.contains("\npassword_expiry_utc="))
            for request in [
                "protocol=https\nhost=git.example.com\n\n", "protocol=ftp\nhost=git.example.com\n\n",
                "protocol=https\nhost=unknown.example.com\n\n", "host=git.example.com\n\n",
            ] {
                for operation in ["get", "store"] {
                    let quick = try await front.run(a, ["credential", "git", operation], input: request)
                    let whole = try await full(a, ["credential", "git", operation], input: request)
                    #expect(quick.status == whole.status, "\(operation) \(request)")
                    #expect(quick.stdout == whole.stdout, "\(operation) \(request)")
                }
            }
            for arguments in [["credential", "kubectl"], ["credential", "kubectl", "--token", "access"]] {
                let environment = ["KUBERNETES_EXEC_INFO": #"{"apiVersion":"client.authentication.k8s.io/v1beta1"}"#]
                let quick = try await front.run(a, arguments, environment: environment)
                #expect(quick.status == 0, "\(arguments): \(quick.stderr)")
                #expect(quick.stdout.contains("v1beta1"))
                let whole = try await full(a, arguments, environment: environment)
                #expect(quick.stdout == whole.stdout, "\(arguments)")
            }
            #expect(dev.faults.count("token.refresh_token") == 0)
        }
    }

    @Test("what it cannot answer goes to the full tool: a stale token, another command, options it does not take")
    func handsOver() async throws {
        try await withDevices { dev, a, _ in
            try await signInWithShortToken(dev, a)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            let cases: [[String]] = [
                ["token"], ["accounts"], ["token", "--force"], ["token", "--scope", "openid"], ["--version"],
                ["token", "--format", "yaml"], ["token", "--json", "--format", "export"], ["token", "-h"],
                ["--store", "postgres://nowhere/x", "token"], ["credential", "git", "erase"],
                ["token", "--format", "headers", "--id-token"],
            ]
            for arguments in cases {
                let alone = try await front.run(a, arguments, input: "protocol=https\nhost=h\npassword=p\n\n")
                #expect(alone.status == 1, "\(arguments)")
                #expect(alone.stderr.contains("latchkey-full cannot be started"), "\(arguments): \(alone.stderr)")
            }
            dev.faults.resetCounters()
            // The real one hands the stale token over, and the full tool refreshes it.
            let refreshed = try await a.run("token")
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(dev.faults.count("token.refresh_token") == 1)
            // Then the lone one answers: the token is valid now.
            #expect(try await front.run(a, ["token"]).stdout == refreshed.stdout)
        }
    }

    @Test("with no home in the environment it hands over: the full tool reads the user database")
    func noHomeInEnvironment() async throws {
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            #expect(try await front.run(a, ["token"]).status == 0)
            let homeless = try await front.run(a, ["token"], environment: ["HOME": "", "XDG_CONFIG_HOME": ""])
            #expect(homeless.status == 1)
            #expect(homeless.stderr.contains("latchkey-full cannot be started"), "\(homeless.stderr)")
        }
    }

    @Test("a store it does not read as the full tool would is handed over: a damaged default, a key elsewhere")
    func doubtfulStores() async throws {
        try await withDevices { _, a, b in
            #expect(try await login(a, "alice").status == 0)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            #expect(try await front.run(a, ["token"]).status == 0)
            // The key moved to a file elsewhere is read from there.
            let keyFolder = try TemporaryFolder()
            defer { keyFolder.cleanUp() }
            let moved = try await a.run("key", "move", "--to", "file", keyFolder.file("store.key"))
            #expect(moved.status == 0, "\(moved.stderr)")
            let afterMove = try await front.run(a, ["token"])
            #expect(afterMove.status == 0, "\(afterMove.stderr)")
            // A key location this version does not read quickly (the keyring): handed over.
            let location = URL(fileURLWithPath: a.path).appendingPathComponent("key-location.json")
            try Data(#"{"kind":"keyring"}"#.utf8).write(to: location)
            #expect(try await front.run(a, ["token"]).stderr.contains("latchkey-full cannot be started"))
            // A store whose default marker was tampered with: the full tool reports it.
            #expect(try await login(b, "bob").status == 0)
            let database = URL(fileURLWithPath: b.path).appendingPathComponent("credentials.sqlite").path
            let sqlite = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/sqlite3"),
                [database, "UPDATE setting SET value = x'00' WHERE name = 'default_credential'"])
            #expect(sqlite.status == 0, "\(sqlite.stderr)")
            #expect(try await front.run(b, ["token"]).stderr.contains("latchkey-full cannot be started"))
            let whole = try await b.run("token")
            #expect(whole.status == 1 && whole.stderr.contains("default"), "\(whole.stderr)")
        }
    }

    @Test("a sign-out in one process is seen by the next quick answer in another")
    func signOutSeen() async throws {
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let front = try LoneFront()
            defer { front.folder.cleanUp() }
            #expect(try await front.run(a, ["token"]).status == 0)
            let signOut = try await a.run("signout", "--yes")
            #expect(signOut.status == 0, "\(signOut.stderr)")
            let after = try await front.run(a, ["token"])
            #expect(after.status != 0)
            #expect(after.stdout.isEmpty, "no token after the sign-out")
        }
    }
}
