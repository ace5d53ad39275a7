import Synchronization

/// The change counter of a SQLite store, read on the caller's thread: SQLite's
/// `PRAGMA data_version` on a connection of its own, which changes whenever any other
/// connection — another process, or the store's own connection — commits.
///
/// A read of it costs one short statement under a lock, with no hop to another thread, which
/// is what lets a credential kept in memory be handed out in microseconds and still never
/// after another process changed it (``SQLiteCredentialStorage``'s read cache).
package final class SQLiteChangeCounter: Sendable {
    private struct Reader {
        let connection: SQLiteConnection
        let statement: SQLiteStatement
    }

    /// Only ever used under this lock. `nil` once it failed: the counter is then unknown for
    /// good, and every reader reads the store itself.
    private let reader: Mutex<Reader?>

    /// A counter of the store at `path`; `nil` when the file cannot be opened by SQLite.
    package init?(path: String) {
        // No busy timeout: a statement that would wait reports the counter as unknown instead
        // of blocking the caller's thread (the caller then reads the store, which may wait).
        guard let connection = try? SQLiteConnection(path: path, busyTimeout: 0),
            let statement = try? connection.prepare("PRAGMA data_version")
        else { return nil }
        reader = Mutex(Reader(connection: connection, statement: statement))
    }

    /// Closes the counter's connection: from now on the counter is unknown.
    package func close() {
        reader.withLock { $0 = nil }
    }

    /// The counter now; `nil` when it cannot be read this time (the store is busy).
    package func value() -> Int64? {
        reader.withLock { reader -> Int64? in
            guard let current = reader else { return nil }
            do throws(SQLiteReadError) {
                return try current.statement.integer()
            } catch {
                // Busy now, another time not; any other failure is kept: nothing is guessed.
                if !error.isBusy { reader = nil }
                return nil
            }
        }
    }
}
