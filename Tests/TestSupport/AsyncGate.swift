import NIOConcurrencyHelpers

/// Lets one test at a time into a part of the suite: the tests that drive Glewlwyd, whose
/// SQLite database answers 500 now and then when the whole suite writes to it at once
/// ("Error executing sql query" in its log), or those that start many processes at once.
/// Waiting never blocks a thread.
public final class AsyncGate: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// The gate of the tests that talk to the running Glewlwyd.
    public static let glewlwyd = AsyncGate()

    /// The gate of the tests that start twenty processes at once (kubectl calls, `mcp-proxy`
    /// clients, git helpers): two of them side by side on a two-core machine, under the thread
    /// sanitizer, starve each other past their own clients' timeouts (kubectl's 10 s TLS
    /// handshake). One at a time, each still runs its twenty together.
    public static let fanOut = AsyncGate()

    /// Runs `body` once no other holder is inside.
    public func run<T>(_ body: () async throws -> T) async rethrows -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        defer {
            let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiters.isEmpty else {
                    state.busy = false
                    return nil
                }
                return state.waiters.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
