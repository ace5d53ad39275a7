public import Foundation
import NIOConcurrencyHelpers
import Subprocess
import SystemPackage

/// A process a test starts, talks to and waits for.
///
/// Built on swift-subprocess, which waits for the child without blocking a thread. Foundation's
/// `Process` on Linux is not used: its exit monitor can touch a `Process` that the test has
/// already released, which crashed the test runner under load.
public final class ChildProcess: Sendable {
    /// How a process ended and what it wrote.
    public struct Result: Sendable {
        /// The exit code, or the number of the signal that ended the process.
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// What the process has written so far, and whether it has closed both its outputs (it has
    /// ended then, or will write nothing more: a waiter must not wait for standard input to close,
    /// which only ``finish()`` does).
    private final class Output: Sendable {
        struct State {
            var stdout = ""
            var stderr = ""
            var openStreams = 2
            var ended: Bool { openStreams <= 0 }
        }
        let state = NIOLockedValueBox(State())
        func withLockedValue<T>(_ body: (inout State) -> T) -> T {
            state.withLockedValue { body(&$0) }
        }
    }

    /// The child's process id.
    public let processIdentifier: Int32
    private let task: Task<Int32, any Error>
    private let output: Output
    private let input: AsyncStream<String>.Continuation

    private init(
        processIdentifier: Int32, task: Task<Int32, any Error>, output: Output,
        input: AsyncStream<String>.Continuation
    ) {
        self.processIdentifier = processIdentifier
        self.task = task
        self.output = output
        self.input = input
    }

    /// Starts `executable`. `input`, when given, is written to standard input, which is then
    /// closed; without it standard input stays open for ``write(_:)`` until ``closeInput()``.
    public static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil
    ) async throws -> ChildProcess {
        // Writing to a child that has exited must be an error, not the end of the test process.
        signal(SIGPIPE, SIG_IGN)
        let output = Output()
        let (inputs, inputContinuation) = AsyncStream<String>.makeStream()
        if let input {
            inputContinuation.yield(input)
            inputContinuation.finish()
        }
        let (started, startedContinuation) = AsyncThrowingStream<Int32, any Error>.makeStream()
        var variables: [Environment.Key: String] = [:]
        for (name, value) in environment ?? ProcessInfo.processInfo.environment {
            variables[Environment.Key(stringLiteral: name)] = value
        }
        let task = Task<Int32, any Error> {
            defer { output.withLockedValue { $0.openStreams = 0 } }
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(executable.path)), arguments: Arguments(arguments),
                    environment: .custom(variables), input: .inputWriter, output: .sequence, error: .sequence
                ) { execution in
                    startedContinuation.yield(execution.processIdentifier.value)
                    startedContinuation.finish()
                    try await withThrowingTaskGroup { group in
                        group.addTask {
                            // A child may exit without reading its input; that is not the test's failure.
                            for await text in inputs { _ = try? await execution.standardInputWriter.write(text) }
                            try? await execution.standardInputWriter.finish()
                        }
                        group.addTask {
                            defer { output.withLockedValue { $0.openStreams -= 1 } }
                            for try await chunk in execution.standardOutput {
                                let text = chunk.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                                output.withLockedValue { $0.stdout += text }
                            }
                        }
                        group.addTask {
                            defer { output.withLockedValue { $0.openStreams -= 1 } }
                            for try await chunk in execution.standardError {
                                let text = chunk.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                                output.withLockedValue { $0.stderr += text }
                            }
                        }
                        // The output ends with the process; input may still be open then.
                        try await group.next()
                        try await group.next()
                        try await group.next()
                    }
                }
                switch result.terminationStatus {
                case .exited(let code): return code
                case .signaled(let signal): return signal
                }
            } catch {
                startedContinuation.finish(throwing: error)
                throw error
            }
        }
        for try await processIdentifier in started {
            return ChildProcess(
                processIdentifier: processIdentifier, task: task, output: output, input: inputContinuation)
        }
        // Not reached: the stream ends with an id or with the launch error.
        throw CocoaError(.executableLoad)
    }

    /// Starts `executable` and waits for it to end.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil
    ) async throws -> Result {
        try await start(executable, arguments, environment: environment, input: input).finish()
    }

    /// Runs `executable` with `input` (bytes) on standard input and returns its exit status and
    /// its standard output as bytes (a CGI program's answer, say); standard error is dropped.
    public static func runBinary(
        _ executable: URL, _ arguments: [String], environment: [String: String], input: [UInt8]
    ) async throws -> (status: Int32, stdout: [UInt8]) {
        var variables: [Environment.Key: String] = [:]
        for (name, value) in environment { variables[Environment.Key(stringLiteral: name)] = value }
        let result = try await Subprocess.run(
            .path(FilePath(executable.path)), arguments: Arguments(arguments), environment: .custom(variables),
            input: .array(input), output: .bytes(limit: 256 << 20))
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = code
        case .signaled(let signal): status = signal
        }
        return (status, result.standardOutput)
    }

    /// Writes `text` to standard input.
    public func write(_ text: String) { input.yield(text) }

    /// Closes standard input.
    public func closeInput() { input.finish() }

    /// Whether the process has closed both its outputs (it has ended, or writes nothing more).
    public var hasEnded: Bool { output.withLockedValue { $0.ended } }

    /// Sends `signal` (SIGINT, SIGKILL, …) to the process.
    public func send(signal: Int32) { _ = kill(processIdentifier, signal) }

    /// Standard output so far, once `done` holds for it or the process has closed its outputs
    /// (ended); throws ``TimedOut`` after ``limit``.
    public func standardOutput(until done: (String) -> Bool) async throws -> String {
        try await text(standardError: false, until: done)
    }

    /// Standard error so far, once `done` holds for it or the process has closed its outputs
    /// (ended); throws ``TimedOut`` after ``limit``.
    public func standardError(until done: (String) -> Bool) async throws -> String {
        try await text(standardError: true, until: done)
    }

    private func text(standardError: Bool, until done: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + TestTiming.scaled(Self.limit)
        while true {
            let (text, ended) = output.withLockedValue { (standardError ? $0.stderr : $0.stdout, $0.ended) }
            if ended || done(text) { return text }
            if ContinuousClock.now > deadline { throw timedOut("write what the test waits for") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// How long a test waits for a child before it fails instead of hanging (times the slowdown).
    public static let limit: Duration = .seconds(180)

    /// Waits for the process to end (closing standard input first). A process that has not ended
    /// within ``limit`` is killed, and the wait throws a ``TimedOut`` that shows what it wrote: a
    /// hung child fails its test instead of stopping the whole run.
    public func finish() async throws -> Result {
        input.finish()
        let task = self.task
        let once = Once()
        let status = try await withCheckedThrowingContinuation { continuation in
            once.continuation.withLockedValue { $0 = continuation }
            let resume: @Sendable (Swift.Result<Int32, any Error>) -> Void = { result in
                once.continuation.withLockedValue { $0.take() }?.resume(with: result)
            }
            Task { resume(await task.result) }
            Task {
                try? await Task.sleep(for: TestTiming.scaled(Self.limit))
                guard once.continuation.withLockedValue({ $0 != nil }) else { return }
                let error = self.timedOut("end")
                self.send(signal: SIGKILL)
                resume(.failure(error))
            }
        }
        return output.withLockedValue { Result(status: status, stdout: $0.stdout, stderr: $0.stderr) }
    }

    /// The wait for the process, resumed once: by its end or by the time limit.
    private final class Once: Sendable {
        let continuation = NIOLockedValueBox<CheckedContinuation<Int32, any Error>?>(nil)
    }

    /// A child did not do what the test waited for within ``ChildProcess/limit``.
    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String
    }

    private func timedOut(_ what: String) -> TimedOut {
        let (stdout, stderr) = output.withLockedValue { ($0.stdout, $0.stderr) }
        return TimedOut(
            description: "process \(processIdentifier) did not \(what) within \(TestTiming.scaled(Self.limit)); "
                + "its output so far: \(stdout.suffix(2000)) | its errors so far: \(stderr.suffix(2000))")
    }
}
