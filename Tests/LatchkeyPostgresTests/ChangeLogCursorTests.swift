import LatchkeyPostgres
import Testing

/// How a reader of the PostgreSQL change log goes on: entry numbers become visible out of order
/// (each commits when its transaction does), and a number a rolled-back transaction took never
/// comes. Pure values, no server.
@Suite("The change log's cursor")
struct ChangeLogCursorTests {
    @Test("entries in order move the floor; each is answered once, however often it is read again")
    func inOrder() {
        var cursor = ChangeLogCursor(after: 10)
        #expect(cursor.take([11, 12, 13], now: 0) == [11, 12, 13])
        #expect(cursor.floor == 13)
        #expect(cursor.take([13, 14], now: 1) == [14])
        #expect(cursor.take([], now: 2) == [])
        #expect(cursor.floor == 14)
    }

    @Test("an entry that commits after a later-numbered one is still answered, and the floor waits for it")
    func lateCommit() {
        var cursor = ChangeLogCursor(after: 0)
        #expect(cursor.take([1, 3], now: 0) == [1, 3])
        #expect(cursor.floor == 1, "2 is missing: the next read starts after 1")
        #expect(cursor.take([3], now: 1) == [], "3 is not answered twice")
        #expect(cursor.take([2, 3, 4], now: 2) == [2, 4])
        #expect(cursor.floor == 4)
    }

    @Test("a number that never comes is given up on after the gap's lifetime, not before")
    func rolledBack() {
        var cursor = ChangeLogCursor(after: 0)
        #expect(cursor.take([2], now: 100) == [2])
        #expect(cursor.floor == 0)
        #expect(cursor.take([2], now: 100 + ChangeLogCursor.gapLifetime - 1) == [])
        #expect(cursor.floor == 0)
        #expect(cursor.take([2, 3], now: 100 + ChangeLogCursor.gapLifetime) == [3])
        #expect(cursor.floor == 3)
    }

    @Test("far behind (a pruned log): the cursor goes on from what it reads")
    func farBehind() {
        var cursor = ChangeLogCursor(after: 5)
        #expect(cursor.take([50_000, 50_001], now: 0) == [50_000, 50_001])
        #expect(cursor.floor == 50_001)
    }
}
