import Foundation

/// Finds the package's own executables (built by `swift build` / `swift test`) for tests that
/// run them as separate processes.
enum Executables {
    /// The folder that holds the test bundle and the package's executables.
    static var buildFolder: URL {
        if let folder = ProcessInfo.processInfo.environment["LATCHKEY_BUILD_FOLDER"] {
            return URL(fileURLWithPath: folder)
        }
        // The test runner is an executable (or bundle) inside the build folder.
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("latchkey-store-worker").path) {
                return url
            }
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }

    static func url(_ name: String) -> URL { buildFolder.appendingPathComponent(name) }
}

/// A child process whose standard output is collected.
final class ChildProcess: Sendable {
    let process: Process
    private let output: Pipe

    init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
        process = Process()
        output = Pipe()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
    }

    /// Waits for the process to end; returns its status and everything it wrote to stdout.
    func finish() async -> (status: Int32, output: String) {
        // Read before waiting, so a child that fills the pipe is not stuck writing.
        let handle = output.fileHandleForReading
        let data: Data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: handle.readDataToEndOfFile()) }
        }
        await process.exited()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func kill(signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
    }
}
