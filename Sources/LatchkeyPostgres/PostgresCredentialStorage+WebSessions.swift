public import Foundation
public import Latchkey
import PostgresNIO

/// Web sessions, pending sign-ins (sealed) and the logout tokens seen, in tables every instance
/// shares: a session ended by one instance is gone for all, and a logout token's `jti` is
/// recorded once (its primary key decides which instance's insert wins).
extension PostgresCredentialStorage: WebSessionStorage {
    public func insertWebSession(_ session: WebSession) async throws(StorageError) {
        try await execute(
            """
            INSERT INTO latchkey_web_session (\(unescaped: WebSession.storedColumns))
            VALUES (\(session.handle), \(session.credentialID.rawValue), \(session.issuer), \(session.subject),
                \(session.providerSessionID), \(session.createdAt.timeIntervalSinceReferenceDate),
                \(session.lastSeenAt.timeIntervalSinceReferenceDate), \(session.expiresAt.timeIntervalSinceReferenceDate))
            """, doing: "storing a web session")
    }

    public func webSession(handle: String) async throws(StorageError) -> WebSession? {
        try Self.webSessions(
            try await rows(
                "SELECT \(unescaped: WebSession.storedColumns) FROM latchkey_web_session WHERE handle = \(handle)")
        ).first
    }

    public func touchWebSession(handle: String, at date: Date) async throws(StorageError) {
        try await execute(
            """
            UPDATE latchkey_web_session SET last_seen_at = \(date.timeIntervalSinceReferenceDate)
            WHERE handle = \(handle)
            """, doing: "recording a web session's use")
    }

    public func removeWebSession(handle: String) async throws(StorageError) -> WebSession? {
        try Self.webSessions(
            try await rows(
                """
                DELETE FROM latchkey_web_session WHERE handle = \(handle)
                RETURNING \(unescaped: WebSession.storedColumns)
                """)
        ).first
    }

    public func webSessions(issuer: String, providerSessionID: String?, subject: String?) async throws(StorageError)
        -> [WebSession]
    {
        try Self.webSessions(
            try await rows(
                """
                SELECT \(unescaped: WebSession.storedColumns) FROM latchkey_web_session
                WHERE issuer = \(issuer) AND (\(providerSessionID)::text IS NULL OR sid = \(providerSessionID))
                    AND (\(subject)::text IS NULL OR subject = \(subject))
                """))
    }

    public func staleWebSessions(expiredAt date: Date, idleBefore: Date, limit: Int) async throws(StorageError)
        -> [WebSession]
    {
        try Self.webSessions(
            try await rows(
                """
                SELECT \(unescaped: WebSession.storedColumns) FROM latchkey_web_session
                WHERE expires_at <= \(date.timeIntervalSinceReferenceDate)
                    OR last_seen_at < \(idleBefore.timeIntervalSinceReferenceDate)
                LIMIT \(limit)
                """))
    }

    public func insertPendingSignIn(
        handle: String, payload: Data, expiresAt: Date, client: String, limit: Int, now: Date
    ) async throws(StorageError) -> Bool {
        let sealed = try sealer.seal(payload, context: SealContext.pendingSignIn(handle))
        // One statement: the count and the insert see one snapshot (instances inserting for
        // one client at the same moment may each pass the bound once).
        let inserted = try await rows(
            """
            INSERT INTO latchkey_web_pending_sign_in (handle, sealed, expires_at, client)
            SELECT \(handle), \(sealed), \(expiresAt.timeIntervalSinceReferenceDate), \(client)
            WHERE (SELECT count(*) FROM latchkey_web_pending_sign_in
                   WHERE client = \(client) AND expires_at > \(now.timeIntervalSinceReferenceDate)) < \(limit)
            RETURNING handle
            """)
        return !inserted.isEmpty
    }

    public func pendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data? {
        let found = try await rows(
            """
            SELECT sealed FROM latchkey_web_pending_sign_in
            WHERE handle = \(handle) AND expires_at > \(now.timeIntervalSinceReferenceDate)
            """)
        guard let sealed = try? found.first?.decode(Data.self) else { return nil }
        return sealer.open(sealed, context: SealContext.pendingSignIn(handle))
    }

    public func takePendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data? {
        let taken = try await rows(
            "DELETE FROM latchkey_web_pending_sign_in WHERE handle = \(handle) RETURNING sealed, expires_at")
        guard let (sealed, expiresAt) = try? taken.first?.decode((Data, Double).self),
            expiresAt > now.timeIntervalSinceReferenceDate
        else { return nil }
        return sealer.open(sealed, context: SealContext.pendingSignIn(handle))
    }

    public func removeExpiredPendingSignIns(now: Date, limit: Int) async throws(StorageError) -> Int {
        try await rows(
            """
            DELETE FROM latchkey_web_pending_sign_in WHERE handle IN
                (SELECT handle FROM latchkey_web_pending_sign_in
                 WHERE expires_at <= \(now.timeIntervalSinceReferenceDate) LIMIT \(max(0, limit)))
            RETURNING handle
            """
        ).count
    }

    public func recordLogoutToken(_ id: String, keepUntil: Date, now: Date) async throws(StorageError) -> Bool {
        try await execute(
            "DELETE FROM latchkey_logout_token_seen WHERE keep_until < \(now.timeIntervalSinceReferenceDate)",
            doing: "forgetting old logout tokens")
        let inserted = try await rows(
            """
            INSERT INTO latchkey_logout_token_seen (id, keep_until)
            VALUES (\(id), \(keepUntil.timeIntervalSinceReferenceDate))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """)
        return !inserted.isEmpty
    }

    public func forgetLogoutToken(_ id: String) async throws(StorageError) {
        try await execute("DELETE FROM latchkey_logout_token_seen WHERE id = \(id)", doing: "forgetting a logout token")
    }

    private static func webSessions(_ rows: [PostgresRow]) throws(StorageError) -> [WebSession] {
        do {
            return try rows.map { row in
                let (handle, credentialID, issuer, subject, sid, created, lastSeen, expires) = try row.decode(
                    (String, String, String, String?, String?, Double, Double, Double).self)
                return WebSession(
                    handle: handle, credentialID: CredentialID(rawValue: credentialID), issuer: issuer,
                    subject: subject, providerSessionID: sid,
                    createdAt: Date(timeIntervalSinceReferenceDate: created),
                    lastSeenAt: Date(timeIntervalSinceReferenceDate: lastSeen),
                    expiresAt: Date(timeIntervalSinceReferenceDate: expires))
            }
        } catch {
            throw StorageError(.corruptRecord, reason: "A web session row cannot be read.", underlying: error)
        }
    }
}
