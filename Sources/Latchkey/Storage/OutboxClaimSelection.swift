package import Foundation

/// Which outbox entries a claim takes, and what it leaves, decided from what every entry's row
/// says in the clear (nothing is opened): a pure value, for backends that decide in Swift
/// (memory, SQLite), tested as a table. PostgreSQL says the same in SQL; the storage contract
/// checks that every backend agrees.
package struct OutboxClaimSelection: Sendable, Equatable {
    /// One entry as its row says it.
    package struct Row: Sendable, Equatable {
        package var id: UUID
        package var nextAttemptAt: Date
        package var createdAt: Date
        package var failedPermanently: Bool
        package var waitsFor: UUID?
        package var tokenExpiresAt: Date?
        /// Whether another drainer's claim holds it (a live one: a dead drainer's holds nothing).
        package var claimedElsewhere: Bool

        package init(
            id: UUID, nextAttemptAt: Date, createdAt: Date, failedPermanently: Bool, waitsFor: UUID?,
            tokenExpiresAt: Date?, claimedElsewhere: Bool
        ) {
            self.id = id
            self.nextAttemptAt = nextAttemptAt
            self.createdAt = createdAt
            self.failedPermanently = failedPermanently
            self.waitsFor = waitsFor
            self.tokenExpiresAt = tokenExpiresAt
            self.claimedElsewhere = claimedElsewhere
        }
    }

    /// The entries to claim, the earliest due first.
    package var claimed: [UUID]
    /// What is in the outbox at `now` (see ``OutboxBacklog``).
    package var backlog: OutboxBacklog

    /// The claim of `request` at `now` over `rows` (damaged ones included: they are claimed,
    /// and then reported, like any other).
    package init(_ rows: [Row], request: OutboxClaimRequest, now: Date) {
        let sorted = rows.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
        let live = Dictionary(rows.map { ($0.id, $0.failedPermanently) }, uniquingKeysWith: { first, _ in first })
        func waiting(_ row: Row) -> Bool { row.waitsFor.flatMap { live[$0] } == false }
        func expired(_ row: Row) -> Bool { row.tokenExpiresAt.map { $0 <= now } ?? false }
        claimed = Array(
            sorted.filter { row in
                !row.claimedElsewhere
                    && (expired(row)
                        || (!row.failedPermanently && row.nextAttemptAt <= request.dueBy && !waiting(row)))
            }
            .prefix(request.limit).map(\.id))
        var backlog = OutboxBacklog(total: rows.count, oldestCreatedAt: rows.map(\.createdAt).min())
        for row in rows {
            if row.claimedElsewhere {
                backlog.claimedElsewhere += 1
            } else if row.failedPermanently {
                backlog.failedPermanently += 1
            } else if waiting(row) {
                backlog.waiting += 1
            } else if row.nextAttemptAt > now {
                backlog.notDue += 1
            }
        }
        self.backlog = backlog
    }
}
