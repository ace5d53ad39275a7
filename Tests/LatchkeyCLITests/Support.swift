import Foundation
import LatchkeyTestSupport
import Testing

/// The built `latchkey` binary, run as a user would.
enum CLI {
    static var binary: URL { Executables.latchkey }

    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String

        init(_ result: ChildProcess.Result) {
            (status, stdout, stderr) = (result.status, result.stdout, result.stderr)
        }

        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        var array: [[String: Any]] { json as? [[String: Any]] ?? [] }
    }

    /// The environment of a command: this process's, without `LATCHKEY_HOME`, plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LATCHKEY_HOME"] = nil
        return environment.merging(extra) { _, new in new }
    }

    /// Runs `latchkey ARGUMENTS` with `input` on standard input (no terminal anywhere).
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
        -> Run
    {
        Run(
            try await ChildProcess.run(
                binary, arguments, environment: Self.environment(environment), input: input.map { $0 + "\n" } ?? ""))
    }

    /// Starts `latchkey --home HOME --json COMMAND` in a POSIX shell, `command` (the words after
    /// `latchkey`) as a message printed it: what a user, or an AI agent, pasting it runs.
    static func startInShell(_ command: String, home: String, environment extra: [String: String] = [:])
        async throws -> ChildProcess
    {
        try await ChildProcess.start(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \"$LATCHKEY\" --home \"$HOME_DIR\" --json \(command)"],
            environment: environment(extra.merging(["LATCHKEY": binary.path, "HOME_DIR": home]) { $1 }), input: "")
    }

    /// Starts `latchkey ARGUMENTS`, for a test that talks to it while it runs.
    static func start(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> ChildProcess {
        try await ChildProcess.start(binary, arguments, environment: environment(extra), input: "")
    }
}

/// A temporary home: one "device".
struct Device: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-cli-\(UUID().uuidString)").path
    }

    /// `latchkey --home PATH ARGUMENTS`.
    func run(_ arguments: String..., input: String? = nil) async throws -> CLI.Run {
        try await CLI.run(["--home", path] + arguments, input: input)
    }

    func run(arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
        -> CLI.Run
    {
        try await CLI.run(["--home", path] + arguments, input: input, environment: environment)
    }

    /// `latchkey --home PATH ARGUMENTS` in `count` processes at once.
    func runTogether(_ count: Int, _ arguments: [String], environment: [String: String] = [:]) async throws
        -> [CLI.Run]
    {
        try await withThrowingTaskGroup { group in
            for _ in 0..<count {
                group.addTask { try await run(arguments: arguments, environment: environment) }
            }
            return try await group.reduce(into: [CLI.Run]()) { $0.append($1) }
        }
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}

/// A `$BROWSER` that writes down the URL it was given instead of opening it.
struct RecordingBrowser {
    /// The command to put in `$BROWSER`.
    let command: String
    /// Where the URL is written (whole, by a rename).
    let opened: String

    init(in folder: TemporaryFolder) throws {
        opened = folder.file("opened")
        command = folder.file("browser")
        try Data("#!/bin/sh\nprintf '%s' \"$1\" > \(opened).tmp && mv \(opened).tmp \(opened)\n".utf8)
            .write(to: URL(fileURLWithPath: command))
        chmod(command, 0o700)
    }

    /// The URL the CLI opened, once it did.
    var url: String? { try? String(contentsOfFile: opened, encoding: .utf8) }
}
