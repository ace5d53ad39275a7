import Foundation
import Latchkey
import Testing

/// The checks of `WebSessionStorage`.
enum WebSessionChecks {
    typealias Storage = any CredentialStorage & OutboxStorage

    static let base = Date(timeIntervalSince1970: 1_800_000_000)

    static func session(_ handle: String, sid: String?, subject: String?, issuer: String = "https://op.example")
        -> WebSession
    {
        WebSession(
            handle: handle, credentialID: CredentialID(rawValue: "credential-" + handle), issuer: issuer,
            subject: subject, providerSessionID: sid, createdAt: base, lastSeenAt: base,
            expiresAt: base.addingTimeInterval(3_600))
    }

    static func sessions(_ storage: Storage) async throws {
        let web = try #require(storage.capabilities.webSessions, "the storage keeps no web sessions")
        let a = session("a", sid: "s1", subject: "alice")
        let b = session("b", sid: "s2", subject: "alice")
        let c = session("c", sid: nil, subject: "bob")
        let other = session("d", sid: "s1", subject: "alice", issuer: "https://other.example")
        for each in [a, b, c, other] { try await web.insertWebSession(each) }
        #expect(try await web.webSession(handle: "a") == a)
        #expect(try await web.webSession(handle: "missing") == nil)
        let issuer = "https://op.example"
        #expect(try await web.webSessions(issuer: issuer, providerSessionID: "s1", subject: nil) == [a])
        #expect(try await web.webSessions(issuer: issuer, providerSessionID: "s1", subject: "bob").isEmpty)
        let alices = try await web.webSessions(issuer: issuer, providerSessionID: nil, subject: "alice")
        #expect(Set(alices.map(\.handle)) == ["a", "b"])
        try await web.touchWebSession(handle: "a", at: base.addingTimeInterval(90))
        #expect(try await web.webSession(handle: "a")?.lastSeenAt == base.addingTimeInterval(90))
        let stale = try await web.staleWebSessions(
            expiredAt: base.addingTimeInterval(60), idleBefore: base.addingTimeInterval(30), limit: 10)
        #expect(Set(stale.map(\.handle)) == ["b", "c", "d"])
        #expect(try await web.removeWebSession(handle: "a") == a.touched(base.addingTimeInterval(90)))
        #expect(try await web.removeWebSession(handle: "a") == nil)
        #expect(try await web.webSession(handle: "a") == nil)
        #expect(try await storage.all().isEmpty)
    }

    static func removedOnce(_ storage: Storage) async throws {
        let web = try #require(storage.capabilities.webSessions, "the storage keeps no web sessions")
        try await web.insertWebSession(session("x", sid: "s", subject: "alice"))
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await web.removeWebSession(handle: "x") != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await web.recordLogoutToken("iss jti-1", keepUntil: base.addingTimeInterval(60), now: base)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(recorded == 1)
    }

    static func pendingSignIns(_ storage: Storage) async throws {
        let web = try #require(storage.capabilities.webSessions, "the storage keeps no web sessions")
        let payload = Data("verifier and nonce".utf8)
        func insert(_ handle: String, expiresIn seconds: Double, client: String = "c1", limit: Int = 10)
            async throws -> Bool
        {
            try await web.insertPendingSignIn(
                handle: handle, payload: payload, expiresAt: base.addingTimeInterval(seconds), client: client,
                limit: limit, now: base)
        }
        #expect(try await insert("p", expiresIn: 600))
        #expect(try await insert("old", expiresIn: 10))
        // Read, and left in place; then taken once.
        #expect(try await web.pendingSignIn(handle: "p", now: base) == payload)
        #expect(try await web.pendingSignIn(handle: "p", now: base) == payload)
        #expect(try await web.pendingSignIn(handle: "old", now: base.addingTimeInterval(11)) == nil, "expired")
        #expect(try await web.takePendingSignIn(handle: "p", now: base) == payload)
        #expect(try await web.takePendingSignIn(handle: "p", now: base) == nil, "a sign-in completes once")
        #expect(try await web.pendingSignIn(handle: "p", now: base) == nil)
        #expect(try await web.takePendingSignIn(handle: "old", now: base.addingTimeInterval(11)) == nil)
    }

    static func pendingSignInBounds(_ storage: Storage) async throws {
        let web = try #require(storage.capabilities.webSessions, "the storage keeps no web sessions")
        let payload = Data("verifier and nonce".utf8)
        func insert(_ handle: String, client: String, expiresIn seconds: Double = 600, now: Date = base)
            async throws -> Bool
        {
            try await web.insertPendingSignIn(
                handle: handle, payload: payload, expiresAt: base.addingTimeInterval(seconds), client: client,
                limit: 3, now: now)
        }
        #expect(try await insert("a1", client: "a", expiresIn: 10))
        #expect(try await insert("a2", client: "a"))
        #expect(try await insert("a3", client: "a"))
        #expect(try await insert("a4", client: "a") == false, "a client's fourth pending sign-in")
        #expect(try await web.pendingSignIn(handle: "a4", now: base) == nil, "nothing was kept")
        #expect(try await insert("b1", client: "b"), "another client is not held back")
        // Expired sign-ins count no more, and are swept by their expiry, a batch at a time.
        let later = base.addingTimeInterval(11)
        #expect(try await insert("a5", client: "a", now: later))
        #expect(try await web.removeExpiredPendingSignIns(now: later, limit: 10) == 1)
        #expect(try await web.pendingSignIn(handle: "a2", now: later) == payload)
        let end = base.addingTimeInterval(601)
        #expect(try await web.removeExpiredPendingSignIns(now: end, limit: 2) == 2)
        #expect(try await web.removeExpiredPendingSignIns(now: end, limit: 10) == 2)
        #expect(try await web.removeExpiredPendingSignIns(now: end, limit: 10) == 0)
    }

    static func logoutTokens(_ storage: Storage) async throws {
        let web = try #require(storage.capabilities.webSessions, "the storage keeps no web sessions")
        let until = base.addingTimeInterval(180)
        #expect(try await web.recordLogoutToken("iss a", keepUntil: until, now: base))
        #expect(try await web.recordLogoutToken("iss a", keepUntil: until, now: base.addingTimeInterval(100)) == false)
        #expect(try await web.recordLogoutToken("iss b", keepUntil: until, now: base))
        try await web.forgetLogoutToken("iss b")
        #expect(try await web.recordLogoutToken("iss b", keepUntil: until, now: base))
        // Forgotten once its time has passed.
        #expect(try await web.recordLogoutToken("iss a", keepUntil: until, now: base.addingTimeInterval(181)))
    }
}

extension WebSession {
    fileprivate func touched(_ date: Date) -> WebSession {
        var copy = self
        copy.lastSeenAt = date
        return copy
    }
}
