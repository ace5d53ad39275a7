import GRDB
import LatchkeySQLiteReader
import LatchkeyTestSupport
import Testing

/// The SQLite store's change counter: read from the WAL index header, it moves at every
/// commit by any connection, and at nothing else.
@Suite("SQLite change counter")
struct SQLiteChangeCounterTests {
    func database(in folder: TemporaryFolder) throws -> (DatabaseQueue, String) {
        let path = folder.file("counter.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE item (value INTEGER)")
        }
        return (queue, path)
    }

    @Test("it is read from the WAL index, moves at each commit of another connection, and only then")
    func commits() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (queue, path) = try database(in: folder)
        let counter = try #require(SQLiteChangeCounter(path: path))
        let first = try #require(counter.value())
        let fromHeader = if case .header = first { true } else { false }
        try #require(fromHeader, "the counter did not come from the WAL index: \(first)")
        #expect(counter.value() == first, "no commit, no change")
        var seen: Set<SQLiteChangeCounter.Value> = [first]
        for value in 1...5 {
            try await queue.write { db in try db.execute(sql: "INSERT INTO item VALUES (?)", arguments: [value]) }
            let now = try #require(counter.value())
            #expect(!seen.contains(now), "commit \(value) is a change")
            seen.insert(now)
            #expect(counter.value() == now)
        }
        // A write transaction that rolls back commits nothing.
        try? await queue.write { db in
            try db.execute(sql: "INSERT INTO item VALUES (0)")
            throw DatabaseError(message: "rolled back")
        }
        #expect(seen.contains(try #require(counter.value())))
    }

    @Test("a checkpoint that restarts the WAL, then a commit: a value never seen before")
    func restart() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (queue, path) = try database(in: folder)
        let counter = try #require(SQLiteChangeCounter(path: path))
        var seen: Set<SQLiteChangeCounter.Value> = []
        for round in 1...4 {
            try await queue.write { db in try db.execute(sql: "INSERT INTO item VALUES (?)", arguments: [round]) }
            seen.insert(try #require(counter.value()))
            try await queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            try await queue.write { db in try db.execute(sql: "DELETE FROM item WHERE value = ?", arguments: [round]) }
            let after = try #require(counter.value())
            #expect(!seen.contains(after), "round \(round)")
            seen.insert(after)
        }
    }

    @Test(
        "a WAL-index header of a version it does not know is not read: SQLite's data_version answers, and still moves at each commit"
    )
    func unknownHeaderVersion() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (queue, path) = try database(in: folder)
        // The real header is version 3007000; a counter that accepts only another takes it for
        // a future layout.
        let counter = try #require(SQLiteChangeCounter(path: path, acceptingWALVersion: WALIndex.knownVersion + 1))
        let first = try #require(counter.value())
        let fromDataVersion = if case .dataVersion = first { true } else { false }
        #expect(fromDataVersion, "an unknown layout was read: \(first)")
        #expect(!counter.readsWALIndex, "the counter kept reading a header it does not know")
        var seen: Set<SQLiteChangeCounter.Value> = [first]
        for value in 1...3 {
            try await queue.write { db in try db.execute(sql: "INSERT INTO item VALUES (?)", arguments: [value]) }
            let now = try #require(counter.value())
            #expect(!seen.contains(now), "commit \(value) is a change")
            seen.insert(now)
        }
        // The real version is read from the header.
        let reading = try #require(SQLiteChangeCounter(path: path))
        #expect(reading.readsWALIndex)
    }

    @Test("closed, it is unknown")
    func closed() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (_, path) = try database(in: folder)
        let counter = try #require(SQLiteChangeCounter(path: path))
        #expect(counter.value() != nil)
        counter.close()
        #expect(counter.value() == nil)
        #expect(SQLiteChangeCounter(path: folder.file("missing.sqlite")) == nil, "a missing store is not created")
    }
}
