import Latchkey
import LatchkeySQLiteReader
import NIOConcurrencyHelpers

/// Reads of one thing (a credential by id) that callers start while nothing was committed share
/// one read: a hundred callers waiting on one refresh read and open the credential once, not a
/// hundred times in turn on the database's queue.
///
/// A caller joins a read in flight only when the store's change counter reads the same for it
/// as it did when that read was started: nothing was committed in between, so what the read
/// sees is no older than what the caller would have seen. Any other caller starts a read of
/// its own.
final class CoalescedReads<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight {
        var counter: SQLiteChangeCounter.Value
        var task: Task<Result<Value, StorageError>, Never>
    }

    private let flights = NIOLockedValueBox<[Key: Flight]>([:])

    /// The value of the read of `key` in flight under `counter`, or of a new one by `read`.
    func value(
        of key: Key, counter: SQLiteChangeCounter.Value,
        read: @escaping @Sendable () async throws(StorageError) -> Value
    ) async throws(StorageError) -> Value {
        let task = flights.withLockedValue { flights in
            if let flight = flights[key], flight.counter == counter { return flight.task }
            // Not cancelled with the caller that started it: the others wait for it too.
            let task = Task { () async -> Result<Value, StorageError> in
                do throws(StorageError) {
                    return .success(try await read())
                } catch {
                    return .failure(error)
                }
            }
            flights[key] = Flight(counter: counter, task: task)
            return task
        }
        let result = await task.value
        flights.withLockedValue { flights in if flights[key]?.task == task { flights[key] = nil } }
        return try result.get()
    }
}
