import NIOConcurrencyHelpers

/// One operation at a time, shared: callers that arrive while it runs wait for its result
/// instead of starting another. The one single-flight of Latchkey (a credential's refresh, a
/// provider's metadata, its key set, a Ping server's cookie name).
///
/// The operation runs in a task of its own, so a caller that is cancelled does not cancel the
/// work the others wait for.
package final class SingleFlight<Success: Sendable, Failure: Error>: Sendable {
    private struct State {
        var running: Task<Result<Success, Failure>, Never>?
        var generation: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// The result of the operation in flight, or of `operation` started now when none is.
    /// `joined` says whether the caller joined an operation another caller started.
    package func run(_ operation: @escaping @Sendable () async -> Result<Success, Failure>) async -> (
        result: Result<Success, Failure>, joined: Bool
    ) {
        let (task, joined) = state.withLockedValue { state -> (Task<Result<Success, Failure>, Never>, Bool) in
            if let running = state.running { return (running, true) }
            state.generation &+= 1
            let generation = state.generation
            let task = Task {
                let result = await operation()
                self.state.withLockedValue { if $0.generation == generation { $0.running = nil } }
                return result
            }
            state.running = task
            return (task, false)
        }
        return (await task.value, joined)
    }
}

/// A value fetched once and kept, with one fetch in flight at a time for every caller that
/// needs it meanwhile; a failed fetch is not kept, so the next caller tries again.
package final class CachedValue<Value: Sendable, Failure: Error>: Sendable {
    private let cached: NIOLockedValueBox<Value?>
    private let flight = SingleFlight<Value, Failure>()

    /// A cache, holding `value` already when it is given.
    package init(_ value: Value? = nil) {
        cached = NIOLockedValueBox(value)
    }

    /// The kept value, if any.
    package var current: Value? { cached.withLockedValue { $0 } }

    /// The kept value, or the one `fetch` gets (shared with every caller waiting meanwhile).
    /// The value is kept before the flight ends, so a caller that comes after it finds the value
    /// instead of starting another fetch.
    package func value(_ fetch: @escaping @Sendable () async -> Result<Value, Failure>) async throws(Failure) -> Value {
        if let value = current { return value }
        return try await flight.run {
            let result = await fetch()
            if case .success(let value) = result { self.cached.withLockedValue { $0 = value } }
            return result
        }.result.get()
    }

    /// Replaces the kept value.
    package func set(_ value: Value?) {
        cached.withLockedValue { $0 = value }
    }
}
