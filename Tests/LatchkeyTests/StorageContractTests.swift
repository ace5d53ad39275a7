import Foundation
import Latchkey
import Testing

/// The contract every `CredentialStorage` backend keeps, run against each one.
@Suite("Storage contract")
struct StorageContractTests {
    func credential(_ user: String, created: TimeInterval = 0) -> StoredCredential {
        let token = Fixtures.token(user: user)
        let date = Date(timeIntervalSince1970: 1_800_000_000 + created)
        return StoredCredential(
            id: CredentialID(), token: token, metadata: CredentialMetadata(token: token, tags: ["t": user]),
            createdAt: date, updatedAt: date)
    }

    func withStorage(_ backend: Backend, _ body: (any CredentialStorage) async throws -> Void) async throws {
        let (storage, folder) = try backend.makeStorage()
        defer { folder?.cleanUp() }
        try await body(storage)
    }

    @Test("inserts, reads back, lists oldest first", arguments: Backend.allCases)
    func insertAndRead(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            #expect(try await storage.all().isEmpty)
            let alice = credential("alice", created: 0)
            let bob = credential("bob", created: 1)
            try await storage.insert(alice)
            try await storage.insert(bob)
            #expect(try await storage.credential(for: alice.id) == alice)
            #expect(try await storage.credential(for: CredentialID()) == nil)
            #expect(try await storage.all().map(\.id) == [alice.id, bob.id])
        }
    }

    @Test("rejects a duplicate identifier and leaves the first credential", arguments: Backend.allCases)
    func duplicate(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
            try await storage.insert(alice)
            var copy = credential("mallory")
            copy = StoredCredential(
                id: alice.id, token: copy.token, metadata: copy.metadata, createdAt: copy.createdAt,
                updatedAt: copy.updatedAt)
            let error = await #expect(throws: StorageError.self) { try await storage.insert(copy) }
            #expect(error?.code == .duplicateCredential)
            #expect(try await storage.credential(for: alice.id) == alice)
        }
    }

    @Test("updates in place and raises the version; updating a missing credential fails", arguments: Backend.allCases)
    func update(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            var alice = credential("alice")
            try await storage.insert(alice)
            #expect(try await storage.credential(for: alice.id)?.version == 1)
            alice.token.accessToken = "SECRET-NEW"
            alice.metadata.tags = ["role": "admin"]
            try await storage.update(alice)
            alice.version = 2
            #expect(try await storage.credential(for: alice.id) == alice)
            let error = await #expect(throws: StorageError.self) { try await storage.update(credential("ghost")) }
            #expect(error?.code == .credentialNotFound)
            #expect(try await storage.all().count == 1)
        }
    }

    @Test("a write from a stale read is refused and changes nothing (compare-and-swap)", arguments: Backend.allCases)
    func staleWrite(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
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
    }

    @Test("the refresh lease admits one holder at a time, per credential", arguments: Backend.allCases)
    func refreshLease(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
            let bob = credential("bob", created: 1)
            try await storage.insert(alice)
            try await storage.insert(bob)
            let tracker = LeaseTracker()
            try await withThrowingTaskGroup { group in
                for index in 0..<12 {
                    let id = index.isMultiple(of: 2) ? alice.id : bob.id
                    group.addTask {
                        try await storage.withRefreshLease(for: id, duration: .seconds(30)) {
                            await tracker.enter(id)
                            try? await Task.sleep(for: .milliseconds(15))
                            await tracker.leave(id)
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Never two holders of one credential's lease at once; the two credentials' leases
            // are independent, so both were held at the same time at some point.
            #expect(await tracker.peakPerCredential == 1)
            #expect(await tracker.peakOverall == 2)
            #expect(await tracker.entries == 12)
            // A released lease can be taken again at once.
            let again = try await storage.withRefreshLease(for: alice.id, duration: .seconds(30)) { "free" }
            #expect(again == "free")
        }
    }

    @Test("finds by subject, username, email and issuer", arguments: Backend.allCases)
    func indexedQueries(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
            let bob = credential("bob", created: 1)
            try await storage.insert(alice)
            try await storage.insert(bob)
            #expect(try await storage.credentials(matching: .subject("sub-bob")).map(\.id) == [bob.id])
            #expect(try await storage.credentials(matching: .username("alice")).map(\.id) == [alice.id])
            #expect(try await storage.credentials(matching: .email("bob@example.com")).map(\.id) == [bob.id])
            #expect(try await storage.credentials(matching: .email("BOB@example.com")).isEmpty)
            #expect(try await storage.credentials(matching: .issuer(Fixtures.provider.issuer)).count == 2)
            #expect(try await storage.credentials(matching: .username("carol")).isEmpty)
        }
    }

    @Test("deleting the default clears it; deleting another keeps it", arguments: Backend.allCases)
    func deleteAndDefault(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
            let bob = credential("bob", created: 1)
            try await storage.insert(alice)
            try await storage.insert(bob)
            try await storage.setDefaultCredentialID(alice.id)
            #expect(try await storage.delete(bob.id) == StorageDeletion(deleted: true, clearedDefault: false))
            #expect(try await storage.defaultCredentialID() == alice.id)
            #expect(try await storage.delete(alice.id) == StorageDeletion(deleted: true, clearedDefault: true))
            #expect(try await storage.defaultCredentialID() == nil)
            #expect(try await storage.delete(alice.id) == StorageDeletion(deleted: false, clearedDefault: false))
        }
    }

    @Test("setting the default, even to nil, removes nothing; an unknown id is refused", arguments: Backend.allCases)
    func defaultAssignment(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            let alice = credential("alice")
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
    }

    @Test("the outbox keeps entries, earliest due first, and updates and removes them", arguments: Backend.allCases)
    func outbox(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            func entry(_ token: String, due: TimeInterval) -> OutboxEntry {
                OutboxEntry(
                    provider: Fixtures.provider, kind: .refreshToken, token: token, account: "alice",
                    tokenExpiresAt: nil, createdAt: Date(timeIntervalSince1970: 1_800_000_000), attempts: 1,
                    nextAttemptAt: Date(timeIntervalSince1970: 1_800_000_000 + due), lastError: "offline")
            }
            let late = entry("SECRET-LATE", due: 60)
            let early = entry("SECRET-EARLY", due: 30)
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
            #expect(try await storage.damagedRecords().isEmpty)
        }
    }

    @Test(
        "the outbox holds at most its limit, atomically; a permanent failure is kept as such",
        arguments: Backend.allCases)
    func outboxLimit(backend: Backend) async throws {
        try await withStorage(backend) { storage in
            func entry(_ token: String) -> OutboxEntry {
                OutboxEntry(
                    provider: Fixtures.provider, kind: .refreshToken, token: token, account: "alice",
                    tokenExpiresAt: nil, createdAt: Date(timeIntervalSince1970: 1_800_000_000), attempts: 1,
                    nextAttemptAt: Date(timeIntervalSince1970: 1_800_000_000), lastError: nil)
            }
            var first = entry("SECRET-1")
            try await storage.enqueue(first, limit: 2)
            try await storage.enqueue(entry("SECRET-2"), limit: 2)
            let error = await #expect(throws: StorageError.self) {
                try await storage.enqueue(entry("SECRET-3"), limit: 2)
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
    }
}

/// Counts who is inside a lease at the same time.
actor LeaseTracker {
    private var inside: [CredentialID: Int] = [:]
    private(set) var peakPerCredential = 0
    private(set) var peakOverall = 0
    private(set) var entries = 0

    func enter(_ id: CredentialID) {
        inside[id, default: 0] += 1
        entries += 1
        peakPerCredential = max(peakPerCredential, inside[id, default: 0])
        peakOverall = max(peakOverall, inside.values.filter { $0 > 0 }.count)
    }

    func leave(_ id: CredentialID) { inside[id, default: 0] -= 1 }
}
