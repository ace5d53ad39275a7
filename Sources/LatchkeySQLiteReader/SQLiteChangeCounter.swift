import Synchronization

/// The change counter of a SQLite store in WAL mode, read on the caller's thread, with no
/// system call: the header of the WAL index, which every commit by any connection — another
/// process, or the store's own connection — rewrites before the commit is visible to any
/// reader. It is read from SQLite's own mapping of a connection kept for it (never a file
/// descriptor of Latchkey's own: closing one would drop SQLite's locks on the file).
///
/// When the header cannot be had (the database is not in WAL mode), or is being rewritten at
/// the moment, `PRAGMA data_version` on the same connection answers instead: a statement, and
/// two locks taken and released.
///
/// Reading it costs a lock and 96 bytes, which is what lets a credential kept in memory be
/// handed out in well under a microsecond and still never after another process changed it
/// (``SQLiteCredentialStorage``'s read cache).
package final class SQLiteChangeCounter: Sendable {
    /// A value of the counter: equal values, no commit in between.
    package enum Value: Hashable, Sendable {
        case header(WALStamp)
        case dataVersion(Int64)
    }

    private struct Reader {
        let connection: SQLiteConnection
        let statement: SQLiteStatement
        let index: WALIndex?
    }

    /// Only ever used under this lock (the WAL index too: it belongs to the connection). `nil`
    /// once closed or failed: the counter is then unknown for good, and every reader reads the
    /// store itself.
    private let reader: Mutex<Reader?>

    /// A counter of the store at `path`; `nil` when SQLite cannot open or read the file.
    package init?(path: String) {
        // No busy timeout: a statement that would wait reports the counter as unknown instead
        // of blocking the caller's thread (the caller then reads the store, which may wait).
        guard let connection = try? SQLiteConnection(path: path, busyTimeout: 0),
            let statement = try? connection.prepare("PRAGMA data_version"),
            // One read maps the WAL index.
            (try? statement.integer()) != nil
        else { return nil }
        reader = Mutex(Reader(connection: connection, statement: statement, index: connection.walIndex()))
    }

    /// Closes the counter's connection: from now on the counter is unknown.
    package func close() {
        reader.withLock { $0 = nil }
    }

    /// The counter now; `nil` when it cannot be read this time (the store is busy).
    package func value() -> Value? {
        reader.withLock { reader -> Value? in
            guard let current = reader else { return nil }
            if let stamp = current.index?.stamp() { return .header(stamp) }
            do throws(SQLiteReadError) {
                return try current.statement.integer().map(Value.dataVersion)
            } catch {
                // Busy now, another time not; any other failure is kept: nothing is guessed.
                if !error.isBusy { reader = nil }
                return nil
            }
        }
    }
}
