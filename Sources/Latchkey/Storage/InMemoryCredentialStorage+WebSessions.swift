public import Foundation

extension InMemoryCredentialStorage: WebSessionStorage {
    public func insertWebSession(_ session: WebSession) throws(StorageError) {
        webSessionRecords[session.handle] = session
    }

    public func webSession(handle: String) throws(StorageError) -> WebSession? { webSessionRecords[handle] }

    public func touchWebSession(handle: String, at date: Date) throws(StorageError) {
        webSessionRecords[handle]?.lastSeenAt = date
    }

    public func removeWebSession(handle: String) throws(StorageError) -> WebSession? {
        webSessionRecords.removeValue(forKey: handle)
    }

    public func webSessions(issuer: String, providerSessionID: String?, subject: String?) throws(StorageError)
        -> [WebSession]
    {
        webSessionRecords.values.filter { session in
            session.issuer == issuer && (providerSessionID.map { session.providerSessionID == $0 } ?? true)
                && (subject.map { session.subject == $0 } ?? true)
        }
    }

    public func staleWebSessions(expiredAt date: Date, idleBefore: Date, limit: Int) throws(StorageError)
        -> [WebSession]
    {
        Array(webSessionRecords.values.filter { $0.expiresAt <= date || $0.lastSeenAt < idleBefore }.prefix(limit))
    }

    public func insertPendingSignIn(
        handle: String, payload: Data, expiresAt: Date, client: String, limit: Int, now: Date
    ) throws(StorageError) -> Bool {
        let pending = pendingSignIns.values.count { $0.client == client && $0.expiresAt > now }
        guard pending < limit else { return false }
        pendingSignIns[handle] = (payload, expiresAt, client)
        return true
    }

    public func pendingSignIn(handle: String, now: Date) throws(StorageError) -> Data? {
        guard let pending = pendingSignIns[handle], pending.expiresAt > now else { return nil }
        return pending.payload
    }

    public func takePendingSignIn(handle: String, now: Date) throws(StorageError) -> Data? {
        guard let pending = pendingSignIns.removeValue(forKey: handle), pending.expiresAt > now else { return nil }
        return pending.payload
    }

    public func removeExpiredPendingSignIns(now: Date, limit: Int) throws(StorageError) -> Int {
        let expired = pendingSignIns.filter { $0.value.expiresAt <= now }.keys.prefix(max(0, limit))
        for handle in expired { pendingSignIns[handle] = nil }
        return expired.count
    }

    public func recordLogoutToken(_ id: String, keepUntil: Date, now: Date) throws(StorageError) -> Bool {
        logoutTokensSeen = logoutTokensSeen.filter { $0.value >= now }
        guard logoutTokensSeen[id] == nil else { return false }
        logoutTokensSeen[id] = keepUntil
        return true
    }

    public func forgetLogoutToken(_ id: String) throws(StorageError) { logoutTokensSeen[id] = nil }
}
