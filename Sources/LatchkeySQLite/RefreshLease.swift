import Foundation
import GRDB
public import Latchkey
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The refresh lease of a SQLite store: one row per credential in `refresh_lease`, taken and
/// released in `IMMEDIATE` transactions, so processes that share the file see one holder.
///
/// A row names its holder (a random id per call), host and process. It is free when it has
/// expired, or when its holder's process on this host no longer exists (a crashed holder is
/// noticed at once instead of after `duration`). Waiters poll with backoff from 20 ms to
/// 250 ms: a refresh takes at least one network round trip, so a faster poll gains nothing.
extension SQLiteCredentialStorage {
    public func withRefreshLease<Result: Sendable>(
        for id: CredentialID, duration: Duration, _ body: @Sendable () async -> Result
    ) async throws(StorageError) -> Result {
        let holder = UUID().uuidString
        var delay = Duration.milliseconds(20)
        while try await !takeLease(id, holder: holder, duration: duration) {
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw .cancelledWaitingForLease(id)
            }
            delay = min(delay * 2, .milliseconds(250))
        }
        let result = await body()
        do {
            try await write { db in
                try db.execute(
                    sql: "DELETE FROM refresh_lease WHERE credential_id = ? AND holder = ?",
                    arguments: [id.rawValue, holder])
            }
        } catch {
            // It expires on its own; until then other holders wait.
            logger.warning("refresh lease not released", metadata: ["credential": "\(id)", "error": "\(error)"])
        }
        return result
    }

    /// Takes the lease when it is free; returns whether it was taken.
    private func takeLease(_ id: CredentialID, holder: String, duration: Duration) async throws(StorageError) -> Bool {
        let host = LeaseHost.name
        let pid = Int64(getpid())
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let logger = self.logger
        return try await write { db in
            let now = Date().timeIntervalSinceReferenceDate
            if let row = try Row.fetchOne(
                db, sql: "SELECT host, pid, expires_at FROM refresh_lease WHERE credential_id = ?",
                arguments: [id.rawValue])
            {
                let expiresAt: Double = row["expires_at"]
                let holderHost: String = row["host"]
                let holderPID: Int64 = row["pid"]
                let holderDied = holderHost == host && holderPID != pid && !LeaseHost.processExists(holderPID)
                if expiresAt > now && !holderDied { return false }
                if holderDied {
                    logger.debug(
                        "taking over the refresh lease of a holder that exited",
                        metadata: ["credential": "\(id)", "holderPID": "\(holderPID)"])
                }
            }
            try db.execute(
                sql:
                    "INSERT OR REPLACE INTO refresh_lease (credential_id, holder, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [id.rawValue, holder, host, pid, now + seconds])
            return true
        }
    }
}

/// This machine, as lease rows name it.
enum LeaseHost {
    static let name: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Whether a process with this id exists on this machine (`kill(pid, 0)`; EPERM means it
    /// exists but belongs to another user).
    static func processExists(_ pid: Int64) -> Bool {
        guard pid > 0, let pid = pid_t(exactly: pid) else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}
