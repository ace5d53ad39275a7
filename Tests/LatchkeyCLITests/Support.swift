import Foundation
import Testing

/// The built `latchkey` binary, run as a user would.
enum CLI {
    static var binary: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("latchkey")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue
            {
                return candidate
            }
        }
        return URL(fileURLWithPath: ".build/debug/latchkey")
    }

    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String

        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        var array: [[String: Any]] { json as? [[String: Any]] ?? [] }
    }

    /// Runs `latchkey ARGUMENTS` with `input` on standard input (no terminal anywhere).
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
        -> Run
    {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["LATCHKEY_HOME"] = nil
        env.merge(environment) { _, new in new }
        process.environment = env
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data((input + "\n").utf8)) }
        try stdin.fileHandleForWriting.close()
        async let out = read(stdout.fileHandleForReading)
        async let err = read(stderr.fileHandleForReading)
        let (output, errors) = await (out, err)
        // Both pipes are at their end, so the process has ended or is ending.
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
        return Run(status: status, stdout: output, stderr: errors)
    }

    /// A `latchkey` process the test talks to while it runs.
    struct Running: Sendable {
        let process: Process
        let stdout = Pipe()
        let stderr = Pipe()

        init(_ arguments: [String]) throws {
            process = Process()
            process.executableURL = CLI.binary
            process.arguments = arguments
            process.standardOutput = stdout
            process.standardError = stderr
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        /// Standard error so far, read until `done` says it holds what the test waits for.
        func standardError(until done: @escaping @Sendable (String) -> Bool) async -> String {
            let handle = stderr.fileHandleForReading
            return await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    var text = ""
                    while !done(text) {
                        let chunk = handle.availableData
                        if chunk.isEmpty { break }
                        text += String(decoding: chunk, as: UTF8.self)
                    }
                    continuation.resume(returning: text)
                }
            }
        }

        /// Waits for the end; returns the exit status and standard output.
        func finish() async -> (Int32, String) {
            let output = await CLI.read(stdout.fileHandleForReading)
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
    }

    static func read(_ handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: String(decoding: handle.readDataToEndOfFile(), as: UTF8.self))
            }
        }
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

    func run(arguments: [String], input: String? = nil) async throws -> CLI.Run {
        try await CLI.run(["--home", path] + arguments, input: input)
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}
