public import Foundation
import GRDB
public import Latchkey

/// Web sessions, pending sign-ins (sealed) and the logout tokens seen, in tables of the file
/// every process shares.
extension SQLiteCredentialStorage: WebSessionStorage {
    public func insertWebSession(_ session: WebSession) async throws(StorageError) {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO web_session (\(WebSession.storedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    session.handle, session.credentialID.rawValue, session.issuer, session.subject,
                    session.providerSessionID, session.createdAt.timeIntervalSinceReferenceDate,
                    session.lastSeenAt.timeIntervalSinceReferenceDate, session.expiresAt.timeIntervalSinceReferenceDate,
                ])
        }
    }

    public func webSession(handle: String) async throws(StorageError) -> WebSession? {
        try await read { db, _ in
            try Row.fetchOne(
                db, sql: "SELECT \(WebSession.storedColumns) FROM web_session WHERE handle = ?", arguments: [handle]
            ).map(Self.webSession)
        }
    }

    public func touchWebSession(handle: String, at date: Date) async throws(StorageError) {
        try await write { db, _ in
            try db.execute(
                sql: "UPDATE web_session SET last_seen_at = ? WHERE handle = ?",
                arguments: [date.timeIntervalSinceReferenceDate, handle])
        }
    }

    public func removeWebSession(handle: String) async throws(StorageError) -> WebSession? {
        try await write { db, _ in
            let found = try Row.fetchOne(
                db, sql: "SELECT \(WebSession.storedColumns) FROM web_session WHERE handle = ?", arguments: [handle]
            ).map(Self.webSession)
            try db.execute(sql: "DELETE FROM web_session WHERE handle = ?", arguments: [handle])
            return found
        }
    }

    public func webSessions(issuer: String, providerSessionID: String?, subject: String?) async throws(StorageError)
        -> [WebSession]
    {
        try await webSessions(
            where: "issuer = ? AND (? IS NULL OR sid = ?) AND (? IS NULL OR subject = ?)",
            [issuer, providerSessionID, providerSessionID, subject, subject])
    }

    public func staleWebSessions(expiredAt date: Date, idleBefore: Date, limit: Int) async throws(StorageError)
        -> [WebSession]
    {
        try await webSessions(
            where: "expires_at <= ? OR last_seen_at < ? LIMIT ?",
            [date.timeIntervalSinceReferenceDate, idleBefore.timeIntervalSinceReferenceDate, limit])
    }

    /// The sessions `condition` selects.
    private func webSessions(where condition: String, _ arguments: StatementArguments) async throws(StorageError)
        -> [WebSession]
    {
        try await read { db, _ in
            try Row.fetchAll(
                db, sql: "SELECT \(WebSession.storedColumns) FROM web_session WHERE \(condition)", arguments: arguments
            ).map(Self.webSession)
        }
    }

    public func insertPendingSignIn(
        handle: String, payload: Data, expiresAt: Date, client: String, limit: Int, now: Date
    ) async throws(StorageError) -> Bool {
        try await write { db, sealer in
            let pending =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM web_pending_sign_in WHERE client = ? AND expires_at > ?",
                    arguments: [client, now.timeIntervalSinceReferenceDate]) ?? 0
            guard pending < limit else { return false }
            try db.execute(
                sql: "INSERT INTO web_pending_sign_in (handle, sealed, expires_at, client) VALUES (?, ?, ?, ?)",
                arguments: [
                    handle, try sealer.seal(payload, context: SealContext.pendingSignIn(handle)),
                    expiresAt.timeIntervalSinceReferenceDate, client,
                ])
            return true
        }
    }

    public func pendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data? {
        try await read { db, sealer in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT sealed FROM web_pending_sign_in WHERE handle = ? AND expires_at > ?",
                    arguments: [handle, now.timeIntervalSinceReferenceDate]),
                let sealed: Data = row["sealed"]
            else { return nil }
            return sealer.open(sealed, context: SealContext.pendingSignIn(handle))
        }
    }

    public func takePendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data? {
        try await write { db, sealer in
            let row = try Row.fetchOne(
                db, sql: "SELECT sealed, expires_at FROM web_pending_sign_in WHERE handle = ?", arguments: [handle])
            try db.execute(sql: "DELETE FROM web_pending_sign_in WHERE handle = ?", arguments: [handle])
            guard let row, let sealed: Data = row["sealed"], let expiresAt: Double = row["expires_at"],
                expiresAt > now.timeIntervalSinceReferenceDate
            else { return nil }
            return sealer.open(sealed, context: SealContext.pendingSignIn(handle))
        }
    }

    public func removeExpiredPendingSignIns(now: Date, limit: Int) async throws(StorageError) -> Int {
        try await write { db, _ in
            try db.execute(
                sql: """
                    DELETE FROM web_pending_sign_in WHERE handle IN
                        (SELECT handle FROM web_pending_sign_in WHERE expires_at <= ? LIMIT ?)
                    """, arguments: [now.timeIntervalSinceReferenceDate, max(0, limit)])
            return db.changesCount
        }
    }

    public func recordLogoutToken(_ id: String, keepUntil: Date, now: Date) async throws(StorageError) -> Bool {
        try await write { db, _ in
            try db.execute(
                sql: "DELETE FROM logout_token_seen WHERE keep_until < ?",
                arguments: [now.timeIntervalSinceReferenceDate])
            try db.execute(
                sql: "INSERT OR IGNORE INTO logout_token_seen (id, keep_until) VALUES (?, ?)",
                arguments: [id, keepUntil.timeIntervalSinceReferenceDate])
            return db.changesCount == 1
        }
    }

    public func forgetLogoutToken(_ id: String) async throws(StorageError) {
        try await write { db, _ in try db.execute(sql: "DELETE FROM logout_token_seen WHERE id = ?", arguments: [id]) }
    }

    private static func webSession(_ row: Row) -> WebSession {
        WebSession(
            handle: row["handle"], credentialID: CredentialID(rawValue: row["credential_id"]), issuer: row["issuer"],
            subject: row["subject"], providerSessionID: row["sid"],
            createdAt: Date(timeIntervalSinceReferenceDate: row["created_at"]),
            lastSeenAt: Date(timeIntervalSinceReferenceDate: row["last_seen_at"]),
            expiresAt: Date(timeIntervalSinceReferenceDate: row["expires_at"]))
    }
}
