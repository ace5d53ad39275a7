import Foundation
import Latchkey
import Testing

/// The one read cache every backend keeps its reads in, as a pure value: what a change, a
/// write of the storage's own and a read that began before either do to what it serves.
@Suite("The core read cache")
struct CredentialReadCacheTests {
    static func credential(_ name: String, token: String) -> StoredCredential {
        StoredCredential(
            id: CredentialID(rawValue: name),
            token: Token(
                accessToken: token, refreshToken: "rt", issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600),
                provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "c")),
            metadata: CredentialMetadata(issuer: "https://issuer.example", clientID: "c"), createdAt: Date(),
            updatedAt: Date())
    }

    let alice = Self.credential("alice", token: "at-1")
    let bob = Self.credential("bob", token: "bt-1")

    func token(_ cache: CredentialReadCache, _ credential: StoredCredential) -> String? {
        cache.accessToken(credential.id, minimumValidity: 60, at: Date())
    }

    @Test("a change the stamp names drops that credential, the account list and the default; the others stay")
    func namedChange() {
        var cache = CredentialReadCache()
        cache.keep(alice, readAt: cache.epoch)
        cache.keep(bob, readAt: cache.epoch)
        cache.keep(accounts: [AccountSummary(alice)], readAt: cache.epoch)
        cache.keep(defaultID: alice.id, readAt: cache.epoch)
        #expect(token(cache, alice) == "at-1" && token(cache, bob) == "bt-1")
        #expect(cache.accounts?.count == 1 && cache.defaultID == .some(alice.id))

        cache.changed([bob.id])
        #expect(token(cache, bob) == nil && cache.credential(bob.id) == nil)
        #expect(token(cache, alice) == "at-1")
        #expect(cache.accounts == nil && cache.defaultID == nil)
    }

    @Test("a change it does not name, or a write of the storage's own, drops everything")
    func unnamedChange() {
        let changes: [(inout CredentialReadCache) -> Void] = [{ $0.changed([nil]) }, { $0.wrote() }]
        for change in changes {
            var cache = CredentialReadCache()
            cache.keep(alice, readAt: cache.epoch)
            cache.keep(bob, readAt: cache.epoch)
            change(&cache)
            #expect(token(cache, alice) == nil && token(cache, bob) == nil)
        }
    }

    @Test("a read that began before a change keeps nothing it read; one that began after does")
    func readBeforeChange() {
        var cache = CredentialReadCache()
        let before = cache.epoch
        cache.changed([alice.id])
        cache.keep(alice, readAt: before)
        cache.keep(accounts: [AccountSummary(alice)], readAt: before)
        cache.keep(defaultID: alice.id, readAt: before)
        #expect(token(cache, alice) == nil && cache.accounts == nil && cache.defaultID == nil)
        cache.keep(alice, readAt: cache.epoch)
        #expect(token(cache, alice) == "at-1")
    }

    @Test("the credential kept last is served as the others are, and forgetting it leaves none behind")
    func lastKept() {
        var cache = CredentialReadCache()
        cache.keep(alice, readAt: cache.epoch)
        cache.keep(bob, readAt: cache.epoch)
        #expect(cache.credential(bob.id)?.id == bob.id && cache.credential(alice.id)?.id == alice.id)
        cache.forget(bob.id)
        #expect(cache.credential(bob.id) == nil && token(cache, bob) == nil)
        #expect(token(cache, alice) == "at-1")
        // An expired token is not handed out, though the record is kept.
        #expect(cache.accessToken(alice.id, minimumValidity: 60, at: Date().addingTimeInterval(3_600)) == nil)
    }
}
