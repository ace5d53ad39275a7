import GRDBSQLite

/// A connection to a Latchkey SQLite store through SQLite's C API alone: no GRDB, no dispatch
/// queue, no Foundation. It reads and never writes, and it never creates a file: for the
/// store's change counter, checked on the caller's own thread, and for readers that must
/// start fast (the tool's quick commands).
///
/// Not thread-safe: its owner keeps it behind a lock (``SQLiteChangeCounter``) or on one
/// thread. SQLite shares the file's locks with every other connection of the process, so
/// closing it never drops another connection's lock.
package final class SQLiteConnection {
    private let handle: OpaquePointer

    /// Opens the database at `path` for reading. `busyTimeout` is how long a statement waits
    /// for another process's lock (zero: not at all, the caller reads another way).
    package init(path: String, busyTimeout milliseconds: Int32) throws(SQLiteReadError) {
        var handle: OpaquePointer?
        // No SQLITE_OPEN_CREATE: a missing store is an error, never a new empty file.
        let status = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            let code = handle.map { sqlite3_extended_errcode($0) } ?? status
            sqlite3_close(handle)
            throw SQLiteReadError(code: code, what: "open")
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, milliseconds)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Prepares `sql` once, to be stepped many times.
    package func prepare(_ sql: String) throws(SQLiteReadError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteReadError(code: sqlite3_extended_errcode(handle), what: "prepare")
        }
        return SQLiteStatement(statement, connection: self)
    }

    /// Runs `body` in one read transaction, so that every statement in it sees the same
    /// snapshot of the store.
    package func inReadTransaction<T>(_ body: () throws(SQLiteReadError) -> T) throws(SQLiteReadError) -> T {
        try execute("BEGIN DEFERRED")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func execute(_ sql: String) throws(SQLiteReadError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw SQLiteReadError(code: sqlite3_extended_errcode(handle), what: sql) }
    }

    fileprivate var lastErrorCode: Int32 { sqlite3_extended_errcode(handle) }

    /// The WAL index of a database in WAL mode, as SQLite itself maps it for this connection
    /// (its first region, whose first 96 bytes are the two copies of the header): `nil` when the
    /// database is not in WAL mode, or the file has no shared memory. Valid while the connection
    /// is open and has read at least once; SQLite maps it, and unmaps it only at close.
    package func walIndex() -> WALIndex? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
            let file, let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2,
            let map = methods.pointee.xShmMap, let barrier = methods.pointee.xShmBarrier
        else { return nil }
        var region: UnsafeMutableRawPointer?
        // The region is mapped already (the connection read in WAL mode); nothing is created.
        guard map(file, 0, 32_768, 0, &region) == SQLITE_OK, let region else { return nil }
        return WALIndex(header: UnsafeRawPointer(region), barrier: { barrier(file) })
    }
}

/// The header of a WAL index (https://www.sqlite.org/walformat.html, "The WAL-Index Header"):
/// two copies of 48 bytes that every commit rewrites, the second first. Read as SQLite's own
/// readers read it: the first copy, a barrier, the second, equal or not trusted.
///
/// What this relies on, and checks: the layout of header version 3007000 (`iVersion`, the
/// first field of each copy; the only version SQLite has written since WAL mode came, in
/// 3.7.0). A header of any other version is not read at all (``Reading/unknownLayout(_:)``):
/// its caller then asks SQLite (`PRAGMA data_version`) instead.
package struct WALIndex {
    /// The header version whose layout this reads.
    package static let knownVersion: UInt32 = 3_007_000

    let header: UnsafeRawPointer
    let barrier: () -> Void
    /// The version accepted (``knownVersion``, but for tests that make it refuse).
    var acceptedVersion = WALIndex.knownVersion

    /// What a read of the header came to.
    package enum Reading: Equatable {
        /// The stamp of the last commit.
        case stamp(WALStamp)
        /// A writer is rewriting the header, or it is not initialized yet: ask another way, this time.
        case changing
        /// A header of a version whose layout is not this one's: never read it.
        case unknownLayout(UInt32)
    }

    /// The header now: `iChange` (incremented by each transaction), `mxFrame` (the last valid
    /// frame) and the two salts (new at each restart), when both copies agree.
    package func read() -> Reading {
        let version = header.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
        guard version == acceptedVersion else { return .unknownLayout(version) }
        let first = copy(at: 0)
        barrier()
        let second = copy(at: 48)
        guard first == second, header.loadUnaligned(fromByteOffset: 48, as: UInt32.self) == version,
            header.load(fromByteOffset: 12, as: UInt8.self) == 1
        else { return .changing }
        return .stamp(first)
    }

    private func copy(at offset: Int) -> WALStamp {
        WALStamp(
            change: header.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self),
            lastFrame: header.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self),
            salt1: header.loadUnaligned(fromByteOffset: offset + 32, as: UInt32.self),
            salt2: header.loadUnaligned(fromByteOffset: offset + 36, as: UInt32.self))
    }
}

/// What the WAL-index header says of the database's last commit.
package struct WALStamp: Hashable, Sendable {
    package var change: UInt32
    package var lastFrame: UInt32
    package var salt1: UInt32
    package var salt2: UInt32
}

/// A prepared statement of a ``SQLiteConnection``: bound, stepped row by row, reset after.
package final class SQLiteStatement {
    private let statement: OpaquePointer
    private let connection: SQLiteConnection

    fileprivate init(_ statement: OpaquePointer, connection: SQLiteConnection) {
        self.statement = statement
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(statement)
    }

    /// Runs the statement with `arguments` bound to its `?` in order, calling `row` for each
    /// row; the statement is reset afterwards, whatever happened (a statement left stepping
    /// would hold its read transaction open).
    package func forEachRow(
        _ arguments: [String] = [], _ row: (SQLiteRow) throws(SQLiteReadError) -> Void
    ) throws(SQLiteReadError) {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, argument) in arguments.enumerated() {
            // SQLITE_TRANSIENT: SQLite copies the text before this call returns.
            let status = sqlite3_bind_text(
                statement, Int32(index + 1), argument, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            guard status == SQLITE_OK else { throw SQLiteReadError(code: status, what: "bind") }
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: try row(SQLiteRow(statement: statement))
            case SQLITE_DONE: return
            default: throw SQLiteReadError(code: connection.lastErrorCode, what: "step")
            }
        }
    }

    /// The first column of the first row, as an integer; `nil` when there is no row.
    package func integer(_ arguments: [String] = []) throws(SQLiteReadError) -> Int64? {
        var value: Int64?
        try forEachRow(arguments) { row in if value == nil { value = row.integer(0) } }
        return value
    }
}

/// One row of a stepped statement, read column by column (columns count from 0); valid only
/// in the closure it is passed to.
package struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    /// Whether the column holds NULL.
    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    package func integer(_ column: Int32) -> Int64? { isNull(column) ? nil : sqlite3_column_int64(statement, column) }

    package func double(_ column: Int32) -> Double? { isNull(column) ? nil : sqlite3_column_double(statement, column) }

    package func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    package func bytes(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let start = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: count))
    }
}

/// A failure of a ``SQLiteConnection``: SQLite's extended result code and what was being done.
/// It names no value read.
package struct SQLiteReadError: Error, Sendable, CustomStringConvertible {
    package let code: Int32
    package let what: String

    package var description: String { "SQLite error \(code) (\(what))" }

    /// The database is locked by another process, or busy recovering.
    package var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
}
