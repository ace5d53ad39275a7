import NIOConcurrencyHelpers

/// The change counter of a SQLite store in WAL mode, read on the caller's thread, with no
/// system call: the header of the WAL index, which every commit by any connection — another
/// process, or the store's own connection — rewrites before the commit is visible to any
/// reader. It is read from SQLite's own mapping of a connection kept for it (never a file
/// descriptor of Latchkey's own: closing one would drop SQLite's locks on the file).
///
/// When the header cannot be had (the database is not in WAL mode), or is being rewritten at
/// the moment, `PRAGMA data_version` on the same connection answers instead: a statement, and
/// two locks taken and released. A header of a version this code does not know the layout of
/// is never read: `PRAGMA data_version` answers from then on.
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

    /// `@unchecked Sendable`, proved here: a `Reader` is created in `init` and from then on
    /// lives only inside `reader`, the lock below; every use of it (and of the connection,
    /// statement and mapping it holds) is inside one `withLockedValue` closure, and none of
    /// them is handed out of one. So no two threads ever touch it at once.
    private struct Reader: @unchecked Sendable {
        let connection: SQLiteConnection
        let statement: SQLiteStatement
        var index: WALIndex?
    }

    /// Only ever used under this lock (the WAL index too: it belongs to the connection). `nil`
    /// once closed or failed: the counter is then unknown for good, and every reader reads the
    /// store itself.
    private let reader: NIOLockedValueBox<Reader?>

    /// A counter of the store at `path`; `nil` when SQLite cannot open or read the file.
    /// `acceptingWALVersion` is the WAL-index header version it reads (tests make it refuse
    /// the real one, to see the fallback).
    package init?(path: String, acceptingWALVersion version: UInt32 = WALIndex.knownVersion) {
        // No busy timeout: a statement that would wait reports the counter as unknown instead
        // of blocking the caller's thread (the caller then reads the store, which may wait).
        guard let connection = try? SQLiteConnection(path: path, busyTimeout: 0),
            let statement = try? connection.prepare("PRAGMA data_version"),
            // One read maps the WAL index.
            (try? statement.integer()) != nil
        else { return nil }
        var index = connection.walIndex()
        index?.acceptedVersion = version
        reader = NIOLockedValueBox(Reader(connection: connection, statement: statement, index: index))
    }

    /// Closes the counter's connection: from now on the counter is unknown.
    package func close() {
        reader.withLockedValue { $0 = nil }
    }

    /// The counter now; `nil` when it cannot be read this time (the store is busy).
    package func value() -> Value? {
        reader.withLockedValue { reader -> Value? in
            // The header, read in place (no copy of the reader on the hot path).
            let read = reader?.index?.read()
            if case .stamp(let stamp)? = read { return .header(stamp) }
            guard var current = reader else { return nil }
            if case .unknownLayout? = read {
                // A layout this code does not know is never guessed at: SQLite answers from now on.
                current.index = nil
                reader = current
            }
            do throws(SQLiteReadError) {
                return try current.statement.integer().map(Value.dataVersion)
            } catch {
                // Busy now, another time not; any other failure is kept: nothing is guessed.
                if !error.isBusy { reader = nil }
                return nil
            }
        }
    }

    /// Whether the counter still reads the WAL-index header (`false` once it fell back to
    /// `PRAGMA data_version` for good, or was closed).
    package var readsWALIndex: Bool {
        reader.withLockedValue { $0?.index != nil }
    }
}
