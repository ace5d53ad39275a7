import Foundation
import Latchkey
import Testing

/// The checks of `CredentialStorage`.
enum CredentialChecks {
    typealias Storage = any CredentialStorage & OutboxStorage

    static func insertAndRead(_ storage: Storage) async throws {
        #expect(try await storage.all().isEmpty)
        let alice = ContractFixtures.credential("alice", created: 0)
        let bob = ContractFixtures.credential("bob", created: 1)
        try await storage.insert(alice)
        try await storage.insert(bob)
        #expect(try await storage.credential(for: alice.id) == alice)
        #expect(try await storage.credential(for: CredentialID()) == nil)
        #expect(try await storage.all().map(\.id) == [alice.id, bob.id])
        #expect(try await storage.damagedRecords().isEmpty)
    }

    static func duplicate(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        let mallory = ContractFixtures.credential("mallory")
        let copy = StoredCredential(
            id: alice.id, token: mallory.token, metadata: mallory.metadata, createdAt: mallory.createdAt,
            updatedAt: mallory.updatedAt)
        let error = await #expect(throws: StorageError.self) { try await storage.insert(copy) }
        #expect(error?.code == .duplicateCredential)
        #expect(try await storage.credential(for: alice.id) == alice)
    }

    static func update(_ storage: Storage) async throws {
        var alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        #expect(try await storage.credential(for: alice.id)?.version == 1)
        alice.token.accessToken = "SECRET-NEW"
        alice.metadata.tags = ["role": "admin"]
        try await storage.update(alice)
        alice.version = 2
        #expect(try await storage.credential(for: alice.id) == alice)
        let error = await #expect(throws: StorageError.self) {
            try await storage.update(ContractFixtures.credential("ghost"))
        }
        #expect(error?.code == .credentialNotFound)
        #expect(try await storage.all().count == 1)
    }

    static func staleWrite(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        // Two writers read version 1; the first one wins.
        var first = try #require(try await storage.credential(for: alice.id))
        var second = first
        first.token.refreshToken = "SECRET-ROTATED"
        try await storage.update(first)
        second.metadata.tags = ["role": "admin"]
        let error = await #expect(throws: StorageError.self) { try await storage.update(second) }
        #expect(error?.code == .versionConflict)
        #expect(error?.isRetryable == true)
        let stored = try #require(try await storage.credential(for: alice.id))
        #expect(stored.token.refreshToken == "SECRET-ROTATED")
        #expect(stored.metadata.tags == alice.metadata.tags)
        #expect(stored.version == 2)
    }

    static func indexedQueries(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        let bob = ContractFixtures.credential("bob", created: 1)
        try await storage.insert(alice)
        try await storage.insert(bob)
        #expect(try await storage.credentials(matching: .subject("sub-bob")).map(\.id) == [bob.id])
        #expect(try await storage.credentials(matching: .username("alice")).map(\.id) == [alice.id])
        #expect(try await storage.credentials(matching: .email("bob@example.com")).map(\.id) == [bob.id])
        #expect(try await storage.credentials(matching: .email("BOB@example.com")).isEmpty)
        #expect(try await storage.credentials(matching: .issuer(ContractFixtures.provider.issuer)).count == 2)
        #expect(try await storage.credentials(matching: .username("carol")).isEmpty)
        let missing = CredentialID(rawValue: "no-such-credential")
        #expect(try await storage.credentials(ids: [alice.id, missing, bob.id]).map(\.id) == [alice.id, bob.id])
        #expect(try await storage.credentials(ids: []).isEmpty)
    }

    static func deleteAndDefault(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        let bob = ContractFixtures.credential("bob", created: 1)
        try await storage.insert(alice)
        try await storage.insert(bob)
        try await storage.setDefaultCredentialID(alice.id)
        #expect(try await storage.delete(bob.id) == StorageDeletion(deleted: true, clearedDefault: false))
        #expect(try await storage.defaultCredentialID() == alice.id)
        #expect(try await storage.delete(alice.id) == StorageDeletion(deleted: true, clearedDefault: true))
        #expect(try await storage.defaultCredentialID() == nil)
        #expect(try await storage.delete(alice.id) == StorageDeletion(deleted: false, clearedDefault: false))
    }

    static func defaultAssignment(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        try await storage.setDefaultCredentialID(alice.id)
        try await storage.setDefaultCredentialID(nil)
        #expect(try await storage.defaultCredentialID() == nil)
        #expect(try await storage.all().count == 1)
        let error = await #expect(throws: StorageError.self) {
            try await storage.setDefaultCredentialID(CredentialID())
        }
        #expect(error?.code == .credentialNotFound)
        #expect(try await storage.defaultCredentialID() == nil)
    }

    /// A storage that shares DPoP nonces keeps the latest per server; one that does not is not
    /// asked to.
    static func dpopNonces(_ storage: Storage) async throws {
        guard let nonces = storage as? any DPoPNonceStorage else { return }
        #expect(try await nonces.dpopNonce(for: "https://a.example") == nil)
        try await nonces.setDPoPNonce("n1", for: "https://a.example")
        try await nonces.setDPoPNonce("m1", for: "client@https://b.example https://b.example")
        try await nonces.setDPoPNonce("n2", for: "https://a.example")
        #expect(try await nonces.dpopNonce(for: "https://a.example") == "n2")
        #expect(try await nonces.dpopNonce(for: "client@https://b.example https://b.example") == "m1")
        #expect(try await storage.all().isEmpty)
        #expect(try await storage.defaultCredentialID() == nil)
    }

    /// A storage that keeps what providers publish keeps each document under its key, with the
    /// dates it was given, and replaces it; one that does not is not asked to.
    static func providerDocuments(_ storage: Storage) async throws {
        guard let documents = storage as? any ProviderDocumentStorage else { return }
        let jwks = "jwks https://a.example/jwks"
        let discovery = "discovery https://a.example/.well-known/openid-configuration"
        #expect(try await documents.providerDocument(for: jwks) == nil)
        let fetched = Date(timeIntervalSince1970: 1_800_000_000)
        let first = ProviderDocument(
            body: Data(#"{"keys":[]}"#.utf8), fetchedAt: fetched, expiresAt: fetched.addingTimeInterval(3_600))
        let metadata = ProviderDocument(
            body: Data(#"{"issuer":"https://a.example"}"#.utf8), fetchedAt: fetched,
            expiresAt: fetched.addingTimeInterval(86_400))
        try await documents.setProviderDocument(first, for: jwks)
        try await documents.setProviderDocument(metadata, for: discovery)
        #expect(try await documents.providerDocument(for: jwks) == first)
        #expect(try await documents.providerDocument(for: discovery) == metadata)
        let second = ProviderDocument(
            body: Data(#"{"keys":[{"kty":"EC"}]}"#.utf8), fetchedAt: fetched.addingTimeInterval(60),
            expiresAt: fetched.addingTimeInterval(3_660))
        try await documents.setProviderDocument(second, for: jwks)
        #expect(try await documents.providerDocument(for: jwks) == second)
        #expect(try await documents.providerDocument(for: discovery) == metadata)
        #expect(try await storage.all().isEmpty)
        #expect(try await storage.defaultCredentialID() == nil)
    }
}

/// The checks of `OutboxStorage`.
enum OutboxChecks {
    typealias Storage = any CredentialStorage & OutboxStorage

    static func entries(_ storage: Storage) async throws {
        let late = ContractFixtures.entry("SECRET-LATE", due: 60)
        let early = ContractFixtures.entry("SECRET-EARLY", due: 30)
        try await storage.enqueue(late, limit: 10)
        try await storage.enqueue(early, limit: 10)
        #expect(try await storage.outboxEntries() == [early, late])
        var retried = early
        retried.attempts = 2
        retried.nextAttemptAt = Date(timeIntervalSince1970: 1_800_000_000 + 120)
        try await storage.updateOutboxEntry(retried)
        #expect(try await storage.outboxEntries() == [late, retried])
        try await storage.removeOutboxEntry(late.id)
        #expect(try await storage.outboxEntries() == [retried])
        // Outbox entries are never credentials.
        #expect(try await storage.all().isEmpty)
        #expect(try await storage.damagedOutboxEntries().isEmpty)
    }

    static func limit(_ storage: Storage) async throws {
        var first = ContractFixtures.entry("SECRET-1")
        try await storage.enqueue(first, limit: 2)
        try await storage.enqueue(ContractFixtures.entry("SECRET-2"), limit: 2)
        let error = await #expect(throws: StorageError.self) {
            try await storage.enqueue(ContractFixtures.entry("SECRET-3"), limit: 2)
        }
        #expect(error?.code == .outboxFull)
        #expect(try await storage.outboxEntries().count == 2)
        // Writing an entry that is already there is not growth.
        first.failedPermanently = true
        first.lastError = "invalid_client"
        try await storage.enqueue(first, limit: 2)
        let stored = try #require(try await storage.outboxEntries().first { $0.id == first.id })
        #expect(stored.failedPermanently)
        #expect(stored == first)
    }

    static func claims(_ storage: Storage) async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_100)
        let due = [ContractFixtures.entry("SECRET-A", due: 10), ContractFixtures.entry("SECRET-B", due: 20)]
        var permanent = ContractFixtures.entry("SECRET-P", due: 5)
        permanent.failedPermanently = true
        let later = ContractFixtures.entry("SECRET-LATER", due: 500)
        for entry in due + [permanent, later] { try await storage.enqueue(entry, limit: 10) }

        // Due entries only, the earliest first, at most the limit; never a permanent failure.
        let first = try await storage.claimOutboxEntries(dueBy: now, limit: 1, now: now, for: .seconds(60))
        #expect(first == [due[0]])
        let second = try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60))
        #expect(second == [due[1]], "a claimed entry is not claimed again")
        #expect(try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60)).isEmpty)

        // An update ends the claim; a claim that ran out (its drainer died) is taken over.
        var retried = due[0]
        retried.attempts = 2
        try await storage.updateOutboxEntry(retried)
        let again = try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60))
        #expect(again == [retried])
        let afterTimeout = now.addingTimeInterval(61)
        let takenOver = try await storage.claimOutboxEntries(
            dueBy: afterTimeout, limit: 10, now: afterTimeout, for: .seconds(60))
        #expect(Set(takenOver.map(\.id)) == Set(due.map(\.id)))
        // Claims change nothing in the listing.
        #expect(try await storage.outboxEntries().count == 4)
    }

    static func waitingEntries(_ storage: Storage) async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_100)
        let global = ContractFixtures.entry("SECRET-GLOBAL", due: 10)
        var revocation = ContractFixtures.entry("SECRET-REVOKE", due: 0)
        revocation.waitsFor = global.id
        try await storage.enqueue(revocation, limit: 10)
        try await storage.enqueue(global, limit: 10)
        #expect(try await storage.outboxEntries().first { $0.id == revocation.id }?.waitsFor == global.id)
        // The entry it waits for first, though it is due later; the waiting one not at all.
        let first = try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60))
        #expect(first.map(\.id) == [global.id])
        // Once that one failed for good, the waiting one goes on its own.
        var failed = global
        failed.failedPermanently = true
        try await storage.updateOutboxEntry(failed)
        let second = try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60))
        #expect(second.map(\.id) == [revocation.id])
        // Once it is gone too.
        var again = revocation
        again.attempts = 2
        again.waitsFor = ContractFixtures.entry("SECRET-GONE").id
        try await storage.updateOutboxEntry(again)
        let third = try await storage.claimOutboxEntries(dueBy: now, limit: 10, now: now, for: .seconds(60))
        #expect(third.map(\.id) == [revocation.id])
    }
}
