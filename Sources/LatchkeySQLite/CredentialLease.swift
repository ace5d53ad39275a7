import Foundation
import GRDB
public import Latchkey
import Logging
import NIOConcurrencyHelpers

/// The lease of a SQLite store: one row per credential in `refresh_lease`, taken and released in
/// `IMMEDIATE` transactions, so processes that share the file see one holder.
///
/// A row names its holder (a random id per lease), host, process, the process's start time, its
/// PID namespace and the boot. Every holder renews its row every quarter of the lease's duration
/// while its body runs. It is never taken from a holder that is still working, and nobody waits
/// for one without bound:
/// - a holder whose process a waiter can see (same host, PID namespace and boot) loses it at
///   once when its process is gone, and when its row ran out (a stopped process renews nothing);
/// - any other holder (another host, a container with its own PID namespace, a row of an earlier
///   version) loses it when its row ran out: its pid means nothing to the waiter.
///
/// Waiters poll with backoff from 20 ms to 250 ms (a refresh takes at least one network round
/// trip, so a faster poll gains nothing) and can be cancelled.
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
        let access = SQLiteLeaseAccess(id: id, storage: self, fence: LeaseFence(lease: id.rawValue, holder: holder))
        let result = await whileHolding(id.rawValue, holder: holder, terms: terms) { await body(access) }
        access.scope.end()
        await release(id.rawValue, holder: holder)
        LeaseWakeups.shared.release(wakeup)
        return result
    }

    /// Runs `body` while the lease row `lease` of `holder` is kept ahead.
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

    /// Keeps the row's expiry ahead while the body runs. Returns when cancelled.
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
                INSERT OR REPLACE INTO refresh_lease
                    (credential_id, holder, host, pid, started, pid_namespace, boot_id, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [lease, holder, me.name, me.pid, me.started, me.pidNamespace, me.bootID, expires])
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
                SELECT credential_id, holder, host, pid, started, pid_namespace, boot_id, expires_at
                FROM refresh_lease WHERE credential_id IN (\(SQL.placeholders(leases)))
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
                                SELECT credential_id, holder, host, pid, started, pid_namespace, boot_id,
                                    expires_at
                                FROM refresh_lease WHERE credential_id != ?
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
package struct LeaseHost: Sendable {
    package let name: String
    package let pid: Int64
    /// The process's start time (clock ticks since boot, from `/proc`), so that a pid reused by
    /// another process is not taken for the holder; 0 where it cannot be read.
    package let started: Int64
    /// The PID namespace the pid is a number in (`/proc/self/ns/pid`: `pid:[INODE]`), and the
    /// boot (`/proc/sys/kernel/random/boot_id`): a pid says something about a holder only to a
    /// process of the same namespace and boot. Empty where they cannot be read.
    package let pidNamespace: String
    package let bootID: String

    package init(name: String, pid: Int64, started: Int64, pidNamespace: String, bootID: String) {
        self.name = name
        self.pid = pid
        self.started = started
        self.pidNamespace = pidNamespace
        self.bootID = bootID
    }

    package static let current = LeaseHost(
        name: hostName, pid: Int64(getpid()), started: startTime(of: Int64(getpid())) ?? 0,
        pidNamespace: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")) ?? "",
        bootID: ((try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines))

    private static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// A lease row's holder.
    package struct Holder: Sendable, Equatable {
        package var id: String
        package var host: String
        package var pid: Int64
        package var started: Int64
        package var pidNamespace: String
        package var bootID: String
        package var expiresAt: Double

        package init(
            id: String, host: String, pid: Int64, started: Int64, pidNamespace: String, bootID: String,
            expiresAt: Double
        ) {
            self.id = id
            self.host = host
            self.pid = pid
            self.started = started
            self.pidNamespace = pidNamespace
            self.bootID = bootID
            self.expiresAt = expiresAt
        }

        init(row: Row) {
            self.init(
                id: row["holder"], host: row["host"], pid: row["pid"], started: row["started"],
                pidNamespace: row["pid_namespace"], bootID: row["boot_id"], expiresAt: row["expires_at"])
        }

        /// Whether the holder may still be working, looking from `me`:
        /// - in this process: while its body runs;
        /// - in another process of this host, namespace and boot: while that process runs (the
        ///   same start time: a reused pid is not it) and its row has not run out — a holder
        ///   that is stopped (Ctrl-Z, a suspended machine) renews nothing, and keeps nobody
        ///   waiting longer than the lease's term;
        /// - anywhere else (another host, another PID namespace, another boot, a row of an
        ///   earlier version that names none): its pid means nothing here, so until its row
        ///   runs out, which its holder renews while it works.
        ///
        /// A pure decision: `process` tells whether a pid runs here and since when, `ownHolder`
        /// whether a holder of this process is in its body.
        package func isAlive(
            now: Double, seenFrom me: LeaseHost, process: (Int64) -> (exists: Bool, started: Int64?),
            ownHolder: (String) -> Bool
        ) -> Bool {
            let judgeable =
                host == me.name && !pidNamespace.isEmpty && pidNamespace == me.pidNamespace && !bootID.isEmpty
                && bootID == me.bootID
            guard judgeable else { return expiresAt > now }
            if pid == me.pid { return ownHolder(id) }
            let found = process(pid)
            guard found.exists, expiresAt > now else { return false }
            guard started != 0, let current = found.started else { return true }
            return current == started
        }

        /// ``isAlive(now:seenFrom:process:ownHolder:)`` with this machine's processes.
        func isAlive(now: Double, seenFrom me: LeaseHost) -> Bool {
            isAlive(
                now: now, seenFrom: me,
                process: { (LeaseHost.processExists($0), LeaseHost.startTime(of: $0)) },
                ownHolder: LiveHolders.shared.contains)
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
