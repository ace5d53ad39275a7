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
        #expect(try await storage.delete(bob.id) == .deletedCredential)
        #expect(try await storage.defaultCredentialID() == alice.id)
        #expect(try await storage.delete(alice.id) == .deletedDefault)
        #expect(try await storage.defaultCredentialID() == nil)
        #expect(try await storage.delete(alice.id) == .notFound)
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

    /// A storage that declares it shares DPoP nonces keeps the latest per server; one that does
    /// not is not asked to.
    static func dpopNonces(_ storage: Storage) async throws {
        guard let nonces = storage.capabilities.dpopNonces else { return }
        #expect(try await nonces.dpopNonce(for: "https://a.example") == nil)
        try await nonces.setDPoPNonce("n1", for: "https://a.example")
        try await nonces.setDPoPNonce("m1", for: "client@https://b.example https://b.example")
        try await nonces.setDPoPNonce("n2", for: "https://a.example")
        #expect(try await nonces.dpopNonce(for: "https://a.example") == "n2")
        #expect(try await nonces.dpopNonce(for: "client@https://b.example https://b.example") == "m1")
        #expect(try await storage.all().isEmpty)
        #expect(try await storage.defaultCredentialID() == nil)
        // Servers a remote names cannot grow the store: beyond the limit, the server recorded
        // longest ago is forgotten, and writing one again makes it the newest.
        let limit = DPoPNonceLimit.servers
        for index in 0..<limit { try await nonces.setDPoPNonce("x\(index)", for: "https://\(index).example") }
        try await nonces.setDPoPNonce("n3", for: "https://a.example")
        try await nonces.setDPoPNonce("y", for: "https://one-more.example")
        #expect(try await nonces.dpopNonce(for: "client@https://b.example https://b.example") == nil)
        #expect(try await nonces.dpopNonce(for: "https://0.example") == nil)
        #expect(try await nonces.dpopNonce(for: "https://1.example") == nil)
        #expect(try await nonces.dpopNonce(for: "https://2.example") == "x2")
        #expect(try await nonces.dpopNonce(for: "https://a.example") == "n3")
        #expect(try await nonces.dpopNonce(for: "https://one-more.example") == "y")
        #expect(try await nonces.dpopNonce(for: "https://\(limit - 1).example") == "x\(limit - 1)")
    }

    /// A storage that keeps what providers publish keeps each document under its key, with the
    /// dates it was given, and replaces it; one that does not is not asked to.
    static func providerDocuments(_ storage: Storage) async throws {
        guard let documents = storage.capabilities.providerDocuments else { return }
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
        try await documents.removeProviderDocuments()
        #expect(try await documents.providerDocument(for: jwks) == nil)
        #expect(try await documents.providerDocument(for: discovery) == nil)
    }

    /// The revalidation of a stale document is claimed by one caller of many at once; not while
    /// another's claim runs, nor for a copy replaced meanwhile; again once the claim ran out.
    static func providerDocumentClaims(_ storage: Storage) async throws {
        guard let documents = storage.capabilities.providerDocuments else { return }
        let key = "discovery https://a.example/.well-known/openid-configuration"
        let fetched = Date(timeIntervalSince1970: 1_800_000_000)
        let now = fetched.addingTimeInterval(90)
        let stale = ProviderDocument(
            body: Data(#"{"issuer":"https://a.example"}"#.utf8), fetchedAt: fetched,
            expiresAt: fetched.addingTimeInterval(60))
        #expect(
            try await !documents.claimProviderDocumentRevalidation(
                for: key, fetchedAt: fetched, now: now, until: now.addingTimeInterval(30)), "no document, no claim")
        try await documents.setProviderDocument(stale, for: key)
        let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    try await documents.claimProviderDocumentRevalidation(
                        for: key, fetchedAt: fetched, now: now, until: now.addingTimeInterval(30))
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1, "one caller of sixteen claims it")
        let claimed = try #require(try await documents.providerDocument(for: key))
        #expect(claimed.revalidationClaimedUntil == now.addingTimeInterval(30))
        #expect(claimed.body == stale.body && claimed.expiresAt == stale.expiresAt)
        let later = now.addingTimeInterval(31)
        #expect(
            try await !documents.claimProviderDocumentRevalidation(
                for: key, fetchedAt: fetched.addingTimeInterval(-1), now: later, until: later.addingTimeInterval(30)),
            "another copy than the one seen")
        #expect(
            try await documents.claimProviderDocumentRevalidation(
                for: key, fetchedAt: fetched, now: later, until: later.addingTimeInterval(30)), "the claim ran out")
        try await documents.removeProviderDocuments()
    }
}
