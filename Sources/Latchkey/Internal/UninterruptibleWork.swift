import NIOConcurrencyHelpers

/// Work that must finish once it has started: a refresh, from the moment its request goes out
/// until the provider's answer is stored. The provider may rotate the refresh token as soon as it
/// gets the request; a process that ends before the answer is stored has lost the new refresh
/// token, and its next refresh is a replay that ends the grant.
///
/// The library itself never drops such an answer when a caller's task is cancelled (the refresh
/// runs in a task of its own, see ``SingleFlight``). A process that handles its own signals (the
/// `latchkey` tool) asks ``whenIdle()`` before it lets one end it. `SIGKILL` cannot wait: that
/// window stays, and the benchmark measures it (``observe(_:)``).
package enum UninterruptibleWork {
    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var observer: (@Sendable (Duration) -> Void)?
    }

    private static let state = NIOLockedValueBox(State())

    /// Runs `body` as work that must finish, on the caller's isolation.
    package static func run<Result, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        let started = ContinuousClock.now
        let observer = state.withLockedValue { state in
            state.running += 1
            return state.observer
        }
        defer {
            let waiters = state.withLockedValue { state in
                state.running -= 1
                guard state.running == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
            observer?(ContinuousClock.now - started)
        }
        return try await body()
    }

    /// Returns once no such work is running (at once when none is).
    package static func whenIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLockedValue { state in
                guard state.running > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Whether such work is running now.
    package static var isRunning: Bool { state.withLockedValue { $0.running > 0 } }

    /// Calls `observer` with the length of every piece of such work from now on (`nil` stops):
    /// how the benchmark measures the window a `SIGKILL` could hit.
    package static func observe(_ observer: (@Sendable (Duration) -> Void)?) {
        state.withLockedValue { $0.observer = observer }
    }
}
