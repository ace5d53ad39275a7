import Foundation
public import Latchkey
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Changes travel between instances through a log, `latchkey_change`, written in the
/// transaction of each change (so a change that rolls back is never announced) and read by
/// every instance's feed every ``changePollInterval``. An entry carries the kind of change, the
/// credential's id and the storage object that made it; never token material.
///
/// A log rather than `LISTEN`/`NOTIFY`: a pooler in transaction mode (PgBouncer's most used
/// mode) carries no notifications, and a connection held open to listen is one a failover ends
/// without a word. A log read by plain queries works on every connection path, and what was
/// written while a reader could not reach the server is still there when it can: entries are
/// kept for an hour.
extension PostgresCredentialStorage {
    /// How often a feed reads the log: a change made on one instance is published on the
    /// others within this, plus a query's time.
    static let changePollInterval = Duration.milliseconds(200)
    // Entries stay in the log for an hour (``pruneChangeLog()``); a feed that could not read it
    // for longer says that changes may have been missed.

    /// Writes `event` to the log, in the transaction of `connection`.
    func notify(_ event: CredentialStoreEvent, on connection: PostgresConnection) async throws {
        let (change, id): (String, String?)
        switch event {
        case .added(let credential): (change, id) = ("added", credential.rawValue)
        case .updated(let credential): (change, id) = ("updated", credential.rawValue)
        case .removed(let credential): (change, id) = ("removed", credential.rawValue)
        case .defaultChanged(let credential): (change, id) = ("default", credential?.rawValue)
        case .changesMayHaveBeenMissed: return
        }
        // Read to its end: a failure must fail the transaction here, not turn its COMMIT into a
        // silent ROLLBACK (see `lockRow(_:on:logger:)`).
        for try await _ in try await connection.query(
            "INSERT INTO latchkey_change (origin, change, credential_id) VALUES (\(origin), \(change), \(id))",
            logger: logger)
        {}
    }

    /// The changes other instances make, read from the log from now on. When the server cannot
    /// be reached, the feed logs it and keeps trying; what was written meanwhile is published
    /// once it can read again, or, when the log no longer holds all of it,
    /// ``CredentialStoreEvent/changesMayHaveBeenMissed``. Every stream of one storage is fed by
    /// its one reader of the log, which also keeps its read cache current.
    public func changesMadeElsewhere() -> AsyncStream<CredentialStoreEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: CredentialStoreEvent.self, bufferingPolicy: .bufferingNewest(4_096))
        let key = UUID()
        changeSubscribers.withLockedValue { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.changeSubscribers.withLockedValue { $0.removeValue(forKey: key) }
        }
        startLogReader()
        return stream
    }

    /// Starts reading the log, unless it is read already: each poll keeps the read cache current
    /// and goes to every subscriber. The task holds the storage only while it polls, and ends
    /// when the storage is released.
    func startLogReader() {
        logReader.withLockedValue { task in
            guard task == nil else { return }
            task = Task { [weak self] in
                var reader = ChangeLogReader()
                while !Task.isCancelled {
                    guard let storage = self else { return }
                    let poll = await reader.poll(storage)
                    storage.readCache.withLockedValue { cache in
                        guard let poll else { return cache.lostFeed() }
                        cache.apply(
                            changed: poll.rows.filter { $0.change != "default" }.map {
                                $0.id.map(CredentialID.init(rawValue:))
                            }, missed: poll.missed, first: poll.first, startedAt: poll.startedAt)
                    }
                    if let poll { storage.publish(poll) }
                    let pause = reader.failing ? Duration.seconds(1) : Self.changePollInterval
                    try? await Task.sleep(for: pause)
                }
            }
        }
    }

    /// Hands what `poll` found that other storage objects changed to every subscriber.
    private func publish(_ poll: ChangeLogPoll) {
        let subscribers = changeSubscribers.withLockedValue { Array($0.values) }
        guard !subscribers.isEmpty else { return }
        var events: [CredentialStoreEvent] = poll.missed ? [.changesMayHaveBeenMissed] : []
        for row in poll.rows where row.origin != origin {
            if let event = Self.event(change: row.change, id: row.id) { events.append(event) }
        }
        for subscriber in subscribers {
            for event in events { subscriber.yield(event) }
        }
    }

    /// Whether `accessToken()` is answered from memory now (a poll of the log that started within
    /// ``PostgresReadCache/staleness`` has completed).
    package var servesFromMemory: Bool {
        readCache.withLockedValue { $0.isFresh(at: .now) }
    }

    /// What one poll of the log found: the entries new to its reader.
    struct ChangeLogPoll: Sendable {
        var rows: [ChangeRow]
        /// The log no longer holds everything since the reader's last poll.
        var missed: Bool
        /// When the poll started: every change committed before then is in `rows` or was in an
        /// earlier poll's.
        var startedAt: ContinuousClock.Instant
        /// The reader's first poll, which only found where the log ends.
        var first = false
    }

    /// A reader of the log: where it is, and whether its last poll failed.
    struct ChangeLogReader: Sendable {
        private var cursor: ChangeLogCursor?
        private(set) var failing = false
        private var polls = 0

        /// Reads what is new in the log; `nil` when it could not (logged once per outage). The
        /// first poll finds the log's end and reads from there.
        mutating func poll(_ storage: PostgresCredentialStorage) async -> ChangeLogPoll? {
            let start = ContinuousClock.now
            do {
                var result = ChangeLogPoll(rows: [], missed: false, startedAt: start)
                if var next = cursor {
                    let entries = try await storage.changes(after: next.floor, recovering: failing)
                    let fresh = Set(next.take(entries.rows.map(\.seq), now: start.secondsSinceStart))
                    result.rows = entries.rows.filter { fresh.contains($0.seq) }
                    result.missed = entries.missed
                    cursor = next
                } else {
                    cursor = ChangeLogCursor(after: try await storage.latestChange())
                    result.first = true
                }
                if failing { storage.logger.info("change feed reads the log again") }
                failing = false
                polls += 1
                if polls % 300 == 0 { await storage.pruneChangeLog() }
                return result
            } catch {
                if !failing, !Task.isCancelled {
                    storage.logger.warning(
                        "change feed cannot read the log; trying again", metadata: ["error": "\(error)"])
                }
                failing = true
                return nil
            }
        }
    }

    /// One entry of the log.
    struct ChangeRow: Sendable {
        var seq: Int64
        var origin: String
        var change: String
        var id: String?
    }

    /// The entries after `floor`, oldest first; `missed` when the log no longer holds the one
    /// right after `floor` (checked after the feed could not read for a while).
    func changes(after floor: Int64, recovering: Bool) async throws -> (rows: [ChangeRow], missed: Bool) {
        var rows: [ChangeRow] = []
        for try await (seq, origin, change, id) in try await client.query(
            """
            SELECT seq, origin, change, credential_id FROM latchkey_change WHERE seq > \(floor) ORDER BY seq LIMIT 1000
            """, logger: logger
        ).decode((Int64, String, String, String?).self) {
            rows.append(ChangeRow(seq: seq, origin: origin, change: change, id: id))
        }
        guard recovering else { return (rows, false) }
        var oldest: Int64?
        for try await value in try await client.query("SELECT min(seq) FROM latchkey_change", logger: logger)
            .decode(Int64?.self)
        {
            oldest = value
        }
        return (rows, (oldest ?? floor + 1) > floor + 1 && floor > 0)
    }

    /// The newest entry's number (0 for an empty log).
    func latestChange() async throws -> Int64 {
        var latest: Int64 = 0
        for try await value in try await client.query(
            "SELECT coalesce(max(seq), 0) FROM latchkey_change", logger: logger
        )
        .decode(Int64.self) {
            latest = value
        }
        return latest
    }

    /// Drops the entries older than an hour.
    func pruneChangeLog() async {
        do {
            try await execute(
                """
                DELETE FROM latchkey_change WHERE made_at < now() - interval '1 hour'
                """, doing: "pruning the change log")
        } catch {
            logger.debug("change log not pruned", metadata: ["error": "\(error)"])
        }
    }

    static func event(change: String, id: String?) -> CredentialStoreEvent? {
        let id = id.map(CredentialID.init(rawValue:))
        switch (change, id) {
        case ("added", let id?): return .added(id)
        case ("updated", let id?): return .updated(id)
        case ("removed", let id?): return .removed(id)
        case ("default", _): return .defaultChanged(id)
        default: return nil
        }
    }
}

extension ContinuousClock.Instant {
    /// Seconds since an arbitrary fixed point of this clock.
    var secondsSinceStart: Double {
        let elapsed = ContinuousClock.Instant.origin.duration(to: self)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static let origin = ContinuousClock.now
}
