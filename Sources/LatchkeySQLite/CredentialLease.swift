import Foundation
import GRDB
public import Latchkey
import Logging
import NIOConcurrencyHelpers

/// The lease of a SQLite store: one row per credential in `refresh_lease`, taken and released in
/// `IMMEDIATE` transactions, so processes that share the file see one holder.
///
/// A row names its holder (a random id per lease), host, process and the process's start time.
/// It is never taken from a holder that is still working: a holder on this host keeps it while
/// its process runs (and, in this process, while its body runs); a holder on another host (a
/// container sharing the volume) renews its row every quarter of the lease's duration while its
/// body runs. A holder that died loses it: at once on this host, `duration` after its last
/// renewal elsewhere. Waiters poll with backoff from 20 ms to 250 ms (a refresh takes at least
/// one network round trip, so a faster poll gains nothing) and can be cancelled.
extension SQLiteCredentialStorage {
    public func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        let holder = UUID().uuidString
        LiveHolders.shared.insert(holder)
        defer { LiveHolders.shared.remove(holder) }
        let wakeup = "\(path)\n\(id.rawValue)"
        var delay = Duration.milliseconds(20)
        while try await !takeLease(id, holder: holder, terms: terms) {
            await LeaseWakeups.shared.wait(for: wakeup, atMost: delay)
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            delay = min(delay * 2, .milliseconds(250))
        }
        let access = StorageLeaseAccess(id, in: self)
        let result = await whileHolding(id.rawValue, holder: holder, terms: terms) { await body(access) }
        access.scope.end()
        await release(id.rawValue, holder: holder)
        LeaseWakeups.shared.release(wakeup)
        return result
    }

    /// Runs `body` while the lease row `lease` of `holder` is kept ahead, for holders that judge
    /// it by its expiry (those on other hosts).
    func whileHolding<Result: Sendable>(
        _ lease: String, holder: String, terms: LeaseTerms, _ body: () async -> Result
    ) async -> Result {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.renewLease(lease, holder: holder, terms: terms) }
            let result = await body()
            group.cancelAll()
            return result
        }
    }

    /// Deletes the lease row `lease` of `holder`, and `also` in the same transaction (a claim's
    /// entries set free).
    func release(_ lease: String, holder: String, also: (@Sendable (Database) throws -> Void)? = nil) async {
        do {
            try await write { db, _ in
                try also?(db)
                try db.execute(
                    sql: "DELETE FROM refresh_lease WHERE credential_id = ? AND holder = ?", arguments: [lease, holder])
            }
        } catch {
            // A dead row of this live process is taken over at once (`LiveHolders`); other
            // processes wait for this process to end, or for its row to run out.
            logger.warning("lease not released", metadata: ["lease": "\(lease)", "error": "\(error)"])
        }
    }

    /// Keeps the row's expiry ahead while the body runs, for holders that judge it by its expiry
    /// (those on other hosts). Returns when cancelled.
    private func renewLease(_ lease: String, holder: String, terms: LeaseTerms) async {
        let every = terms.duration / 4
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: every)
                let expires = terms.clock.date.addingTimeInterval(terms.seconds).timeIntervalSinceReferenceDate
                try await write { db, _ in
                    try db.execute(
                        sql: "UPDATE refresh_lease SET expires_at = ? WHERE credential_id = ? AND holder = ?",
                        arguments: [expires, lease, holder])
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("lease not renewed", metadata: ["lease": "\(lease)", "error": "\(error)"])
            }
        }
    }

    /// Inserts the lease row `lease` for `holder` of this process, in `db`'s transaction.
    static func insertLease(_ lease: String, holder: String, terms: LeaseTerms, in db: Database) throws {
        let me = LeaseHost.current
        let expires = terms.clock.date.addingTimeInterval(terms.seconds).timeIntervalSinceReferenceDate
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO refresh_lease (credential_id, holder, host, pid, started, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [lease, holder, me.name, me.pid, me.started, expires])
    }

    /// Takes the lease when it is free; returns whether it was taken.
    private func takeLease(_ id: CredentialID, holder: String, terms: LeaseTerms) async throws(StorageError) -> Bool {
        let now = terms.clock.date.timeIntervalSinceReferenceDate
        let logger = self.logger
        return try await write { db, _ in
            // A key rotation in progress holds every credential's lease (the row `*`).
            for other in try Self.leaseHolders(db, of: [id.rawValue, Self.storeLease]) {
                guard !other.isAlive(now: now, seenFrom: LeaseHost.current) else { return false }
                logger.debug(
                    "taking over the lease of a holder that is gone",
                    metadata: ["credential": "\(id)", "holderPID": "\(other.pid)", "holderHost": "\(other.host)"])
            }
            try Self.insertLease(id.rawValue, holder: holder, terms: terms, in: db)
            return true
        }
    }

    /// The holders of the lease rows `leases`.
    static func leaseHolders(_ db: Database, of leases: [String]) throws -> [LeaseHost.Holder] {
        guard !leases.isEmpty else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT credential_id, holder, host, pid, started, expires_at FROM refresh_lease
                WHERE credential_id IN (\(SQL.placeholders(leases)))
                """, arguments: StatementArguments(leases)
        ).map(LeaseHost.Holder.init(row:))
    }

    /// The lease row of the whole store, which a key rotation holds: no credential's lease is
    /// taken while it is held.
    static let storeLease = "*"

    /// Runs `body` in a write transaction once this holder holds the whole store: it takes the
    /// store's lease (no new lease is taken meanwhile), then waits for the holders of credential
    /// leases to finish (they are bounded by their lease's duration), for `timeout` at most.
    func withWholeStore<T: Sendable>(
        terms: LeaseTerms, timeout: Duration, _ body: @escaping @Sendable (Database, Sealer) throws -> T
    ) async throws(StorageError) -> T {
        try await withCredentialLease(for: CredentialID(rawValue: Self.storeLease), terms: terms) {
            _ -> Swift.Result<T, StorageError> in
            let deadline = ContinuousClock.now + timeout
            var delay = Duration.milliseconds(20)
            while true {
                do throws(StorageError) {
                    let me = LeaseHost.current
                    let now = terms.clock.date.timeIntervalSinceReferenceDate
                    let done: T? = try await self.write { db, sealer in
                        let holders = try Row.fetchAll(
                            db,
                            sql: """
                                SELECT credential_id, holder, host, pid, started, expires_at FROM refresh_lease
                                WHERE credential_id != ?
                                """, arguments: [Self.storeLease]
                        ).map(LeaseHost.Holder.init(row:))
                        guard !holders.contains(where: { $0.isAlive(now: now, seenFrom: me) }) else { return nil }
                        return try body(db, sealer)
                    }
                    if let done { return .success(done) }
                } catch {
                    return .failure(error)
                }
                guard ContinuousClock.now < deadline else {
                    return .failure(
                        StorageError(
                            .busy, path: self.path,
                            reason:
                                "Other processes kept credentials' leases for longer than \(timeout); nothing was changed. Try again."
                        ))
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .milliseconds(250))
            }
        }.get()
    }
}

/// The holders of leases running in this process, by id: a row of this process whose holder is
/// not among them was left behind (its release failed) and is free.
enum LiveHolders {
    static let shared = Holders()

    final class Holders: Sendable {
        private let ids = NIOLockedValueBox<Set<String>>([])
        func insert(_ id: String) { _ = ids.withLockedValue { $0.insert(id) } }
        func remove(_ id: String) { _ = ids.withLockedValue { $0.remove(id) } }
        func contains(_ id: String) -> Bool { ids.withLockedValue { $0.contains(id) } }
    }
}

/// This process, as lease rows name it, and what a row says about its holder.
struct LeaseHost: Sendable {
    let name: String
    let pid: Int64
    /// The process's start time (clock ticks since boot, from `/proc`), so that a pid reused by
    /// another process is not taken for the holder; 0 where it cannot be read.
    let started: Int64

    static let current = LeaseHost(
        name: hostName, pid: Int64(getpid()), started: startTime(of: Int64(getpid())) ?? 0)

    private static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// A lease row's holder.
    struct Holder {
        var id: String
        var host: String
        var pid: Int64
        var started: Int64
        var expiresAt: Double

        init(row: Row) {
            id = row["holder"]
            host = row["host"]
            pid = row["pid"]
            started = row["started"]
            expiresAt = row["expires_at"]
        }

        /// Whether the holder may still be working: on this host, while its process runs (in
        /// this process, while its body runs); elsewhere, until its row runs out.
        func isAlive(now: Double, seenFrom me: LeaseHost) -> Bool {
            guard host == me.name else { return expiresAt > now }
            if pid == me.pid { return LiveHolders.shared.contains(id) }
            guard LeaseHost.processExists(pid) else { return false }
            guard started != 0, let current = LeaseHost.startTime(of: pid) else { return true }
            return current == started
        }
    }

    /// Whether a process with this id exists on this machine (`kill(pid, 0)`; EPERM means it
    /// exists but belongs to another user).
    static func processExists(_ pid: Int64) -> Bool {
        guard pid > 0, let pid = pid_t(exactly: pid) else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// A process's start time from `/proc/PID/stat` (field 22), or `nil` where there is no such
    /// file (not Linux, or no such process).
    static func startTime(of pid: Int64) -> Int64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the command name: field 3 (state) onwards; the start time is field 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return Int64(fields[19])
    }
}
