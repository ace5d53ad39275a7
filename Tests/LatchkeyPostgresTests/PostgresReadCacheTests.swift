import Crypto
import Foundation
import Latchkey
import LatchkeyPostgres
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// `accessToken()` on a PostgreSQL store answers from memory while the change log says nothing
/// changed: the cache's rules as a pure value, then two instances on a real server.
@Suite("PostgreSQL read cache")
struct PostgresReadCacheTests {
    static func credential(_ name: String, token: String) -> StoredCredential {
        StoredCredential(
            id: CredentialID(rawValue: name),
            token: Token(
                accessToken: token, refreshToken: "rt", issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600),
                provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "c")),
            metadata: CredentialMetadata(issuer: "https://issuer.example", clientID: "c"), createdAt: Date(),
            updatedAt: Date())
    }

    @Test("serves only while a poll that started within the bound has completed")
    func boundedByPolls() {
        var cache = PostgresReadCache()
        let start = ContinuousClock.now
        let alice = Self.credential("alice", token: "at-1")
        cache.keep(alice, readAt: cache.epoch)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: start) == nil, "no poll yet")
        cache.polled(startedAt: start)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: start) == "at-1")
        let late = start.advanced(by: PostgresReadCache.staleness + .milliseconds(1))
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: late) == nil, "no recent poll")
        cache.polled(startedAt: late)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: late) == "at-1")
        cache.lostFeed()
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: late) == nil, "feed lost")
    }

    @Test("a change seen in the log, or made here, drops the credential; a read under way keeps nothing")
    func changes() {
        var cache = PostgresReadCache()
        let now = ContinuousClock.now
        cache.polled(startedAt: now)
        let alice = Self.credential("alice", token: "at-1")
        let bob = Self.credential("bob", token: "bt-1")
        cache.keep(alice, readAt: cache.epoch)
        cache.keep(bob, readAt: cache.epoch)
        cache.changed([alice.id])
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: now) == nil)
        #expect(cache.accessToken(bob.id, minimumValidity: 60, at: Date(), now: now) == "bt-1")
        let readStarted = cache.epoch
        cache.wrote()
        cache.keep(alice, readAt: readStarted)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: now) == nil, "kept across a write")
        #expect(cache.accessToken(bob.id, minimumValidity: 60, at: Date(), now: now) == nil, "a write here empties it")
        cache.keep(bob, readAt: cache.epoch)
        cache.changed([nil])
        #expect(cache.accessToken(bob.id, minimumValidity: 60, at: Date(), now: now) == nil, "an unnamed change")
    }

    @Test(
        "the first read of the log drops what was kept before it: it starts at the log's end and reads no earlier change"
    )
    func firstPollDrops() {
        var cache = PostgresReadCache()
        let alice = Self.credential("alice", token: "at-1")
        cache.keep(alice, readAt: cache.epoch)
        let now = ContinuousClock.now
        cache.apply(changed: [], missed: false, first: true, startedAt: now)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: now) == nil)
        cache.keep(alice, readAt: cache.epoch)
        cache.apply(changed: [], missed: false, first: false, startedAt: now)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: now) == "at-1")
        cache.apply(changed: [], missed: true, first: false, startedAt: now)
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date(), now: now) == nil, "the log lost some")
    }
}

@Suite("PostgreSQL read cache on a server", .enabled(if: PostgresServer.isEnabled))
struct PostgresReadCacheServerTests {
    /// Polls `condition` until it holds or `limit` passes; the time it took.
    func within(_ limit: Duration, _ condition: () async throws -> Bool) async throws -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit * TestTiming.slowdown {
            if try await condition() { return ContinuousClock.now - start }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test(
        "B answers from memory; a removal on A stops B within the bound, one on B at once; with no feed, nothing from memory",
        arguments: PostgresServer.Route.allCases)
    func twoInstances(_ route: PostgresServer.Route) async throws {
        let url = try await PostgresServer.freshDatabase(via: route)
        let key = SymmetricKey(size: .bits256)
        try await PostgresServer.withStore(key: key, url: url) { a, storageA, client in
            try await PostgresServer.withStore(key: key, url: url) { _, b, _ in
                let first = try await a.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice")).id
                let token = try #require(try await storageA.credential(for: first)?.token.accessToken)
                #expect(try await b.validAccessToken(for: first, minimumValidity: 60, at: Date()) == token)
                // The first token asked for started B's reading of the log; what B kept before
                // that reading found the log's end is dropped, so it is read once more.
                #expect(try await within(.seconds(2)) { b.servesFromMemory } != nil)
                #expect(try await b.validAccessToken(for: first, minimumValidity: 60, at: Date()) == token)
                // Removed behind the store's back (no log entry): B still answers, from memory
                // (the row is gone: nothing else could answer). B may rightly drop what it keeps
                // at any poll that leaves it unsure (a lapsed bound, a gap given up on, on a
                // loaded machine): then the row comes back and B keeps it again, a few times.
                try await client.query("CREATE TABLE latchkey_aside AS SELECT * FROM latchkey_credential")
                var fromMemory = false
                for _ in 0..<5 where !fromMemory {
                    _ = try await within(.seconds(2)) {
                        try await b.validAccessToken(for: first, minimumValidity: 60, at: Date()) == token
                            && b.servesFromMemory
                    }
                    try await client.query("DELETE FROM latchkey_credential WHERE id = \(first.rawValue)")
                    fromMemory = try await b.validAccessToken(for: first, minimumValidity: 60, at: Date()) == token
                    if !fromMemory {
                        try await client.query("INSERT INTO latchkey_credential SELECT * FROM latchkey_aside")
                    }
                }
                #expect(fromMemory, "B never answered from memory for a credential whose row was gone")

                // A removal on A reaches B's cache through the log.
                let second = try await a.add(Fixtures.token("bob"), accountClaims: Fixtures.claims("bob")).id
                #expect(try await b.validAccessToken(for: second, minimumValidity: 60, at: Date()) != nil)
                _ = try await a.remove(second)
                let delay = try await within(.seconds(1)) {
                    try await b.validAccessToken(for: second, minimumValidity: 60, at: Date()) == nil
                }
                #expect(delay != nil, "B handed out a removed credential's token past the bound")

                // A removal on B itself: at once.
                let third = try await a.add(Fixtures.token("carol"), accountClaims: Fixtures.claims("carol")).id
                #expect(try await b.validAccessToken(for: third, minimumValidity: 60, at: Date()) != nil)
                _ = try await b.delete(third)
                #expect(try await b.validAccessToken(for: third, minimumValidity: 60, at: Date()) == nil)

                // The log unreadable: B stops answering from memory (the first credential is
                // gone from the table, so only memory would still answer).
                try await client.query("ALTER TABLE latchkey_change RENAME TO latchkey_change_away")
                let off = try await within(.seconds(3)) {
                    try await b.validAccessToken(for: first, minimumValidity: 60, at: Date()) == nil
                }
                try await client.query("ALTER TABLE latchkey_change_away RENAME TO latchkey_change")
                #expect(off != nil, "B answered from memory with no change feed")
            }
        }
    }

    @Test("a removal on A while B's reading of the log is only starting still stops B within the bound")
    func removalWhileTheFeedStarts() async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = SymmetricKey(size: .bits256)
        try await PostgresServer.withStore(key: key, url: url) { a, _, _ in
            try await PostgresServer.withStore(key: key, url: url) { _, b, _ in
                let id = try await a.add(Fixtures.token("alice"), accountClaims: Fixtures.claims("alice")).id
                // B's first token read starts its reading of the log; A removes the credential
                // before that reading has found where the log ends.
                #expect(try await b.validAccessToken(for: id, minimumValidity: 60, at: Date()) != nil)
                _ = try await a.remove(id)
                let stopped = try await within(.seconds(2)) {
                    try await b.validAccessToken(for: id, minimumValidity: 60, at: Date()) == nil
                }
                #expect(stopped != nil, "B kept handing out a token removed before its feed found the log's end")
            }
        }
    }
}
