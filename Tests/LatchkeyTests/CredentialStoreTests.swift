import Foundation
import Latchkey
import LatchkeySQLite
import LatchkeyStorageTesting
import LatchkeyTestSupport
import Testing

@Suite("Credential store")
struct CredentialStoreTests {
    func withStore(_ backend: Backend, _ body: (CredentialStore) async throws -> Void) async throws {
        let (storage, folder) = try backend.makeStorage()
        defer { folder?.cleanUp() }
        try await body(CredentialStore(storage: storage))
    }

    @Test("reads account metadata from the ID token and keeps tags", arguments: Backend.allCases)
    func metadata(backend: Backend) async throws {
        try await withStore(backend) { store in
            let stored = try await store.add(Fixtures.token(user: "alice"), tags: ["team": "blue"])
            let metadata = try #require(try await store.credential(for: stored.id)).metadata
            #expect(metadata.subject == "sub-alice")
            #expect(metadata.preferredUsername == "alice")
            #expect(metadata.email == "alice@example.com")
            #expect(metadata.name == "Alice Example")
            #expect(metadata.issuer == Fixtures.provider.issuer)
            #expect(metadata.clientID == Fixtures.provider.clientID)
            #expect(metadata.tags == ["team": "blue"])
        }
    }

    @Test("find(where:) lists once and reads its matches in one read, oldest first", arguments: Backend.allCases)
    func findWhereReadsOnce(backend: Backend) async throws {
        let (inner, folder) = try backend.makeStorage()
        defer { folder?.cleanUp() }
        let counting = CountingStorage(inner)
        let store = CredentialStore(storage: counting)
        var added: [CredentialID] = []
        for user in ["alice", "bob", "carol", "dave"] {
            added.append(try await store.add(Fixtures.token(user: user)).id)
        }
        counting.reset()
        let found = try await store.find(where: { $0.subject != "sub-bob" })
        #expect(found.map(\.id) == [added[0], added[2], added[3]])
        #expect(counting.counts.listings == 1)
        #expect(counting.counts.opens == 3)
        if backend == .sqlite { #expect(counting.counts.reads == 1, "one read for the three matches") }
        #expect(try await store.find(where: { _ in false }).isEmpty)
    }

    @Test("a token with no ID token still gets issuer and client id")
    func metadataWithoutIDToken() async throws {
        let store = CredentialStore.inMemory()
        var token = Fixtures.token(user: "x")
        token.idToken = nil
        let stored = try await store.add(token)
        #expect(
            stored.metadata
                == CredentialMetadata(issuer: Fixtures.provider.issuer, clientID: Fixtures.provider.clientID))
    }

    @Test("the first credential becomes the default; later ones only when asked", arguments: Backend.allCases)
    func firstBecomesDefault(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"))
            let bob = try await store.add(Fixtures.token(user: "bob"))
            #expect(try await store.default?.id == alice.id)
            let carol = try await store.add(Fixtures.token(user: "carol"), makeDefault: true)
            #expect(try await store.default?.id == carol.id)
            try await store.setDefault(bob.id)
            #expect(try await store.default?.id == bob.id)
        }
    }

    @Test("removing the default sets it to nil with no silent promotion", arguments: Backend.allCases)
    func removingDefault(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"))
            let bob = try await store.add(Fixtures.token(user: "bob"))
            #expect(try await store.remove(alice.id))
            #expect(try await store.default == nil)
            #expect(try await store.all().map(\.id) == [bob.id])
            #expect(try await store.remove(alice.id) == false)
        }
    }

    @Test("assigning the default, even to nil, never removes a credential", arguments: Backend.allCases)
    func assigningDefault(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"))
            let bob = try await store.add(Fixtures.token(user: "bob"))
            try await store.setDefault(nil)
            try await store.setDefault(bob.id)
            try await store.setDefault(nil)
            #expect(try await store.all().map(\.id) == [alice.id, bob.id])
            let error = await #expect(throws: StorageError.self) { try await store.setDefault(CredentialID()) }
            #expect(error?.code == .credentialNotFound)
        }
    }

    @Test("find(where:) and indexed find", arguments: Backend.allCases)
    func finding(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.add(Fixtures.token(user: "alice"), tags: ["role": "admin"])
            let bob = try await store.add(Fixtures.token(user: "bob"))
            #expect(
                try await store.find(where: { $0.tags["role"] == "admin" }).map(\.metadata.preferredUsername) == [
                    "alice"
                ])
            #expect(try await store.find(.email("bob@example.com")).map(\.id) == [bob.id])
        }
    }

    @Test(
        "update keeps tags, re-reads claims, and keeps claims when the new token has no ID token",
        arguments: Backend.allCases)
    func updating(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"), tags: ["k": "v"])
            var refreshed = Fixtures.token(user: "alice", email: "alice@new.example")
            _ = try await store.update(alice.id, token: refreshed)
            var now = try #require(try await store.credential(for: alice.id))
            #expect(now.metadata.email == "alice@new.example")
            #expect(now.metadata.tags == ["k": "v"])
            #expect(now.token == refreshed)
            refreshed.idToken = nil
            refreshed.accessToken = "SECRET-ACCESS-2"
            _ = try await store.update(alice.id, token: refreshed)
            now = try #require(try await store.credential(for: alice.id))
            #expect(now.metadata.email == "alice@new.example")
            #expect(now.token.accessToken == "SECRET-ACCESS-2")
            let error = await #expect(throws: StorageError.self) {
                try await store.update(CredentialID(), token: refreshed)
            }
            #expect(error?.code == .credentialNotFound)
        }
    }

    @Test("publishes added, updated, removed and defaultChanged events in order", arguments: Backend.allCases)
    func events(backend: Backend) async throws {
        try await withStore(backend) { store in
            var iterator = store.changes.makeAsyncIterator()
            let alice = try await store.add(Fixtures.token(user: "alice"))
            let bob = try await store.add(Fixtures.token(user: "bob"))
            try await store.setDefault(bob.id)
            try await store.setDefault(bob.id)  // unchanged: no event
            _ = try await store.setTags(["x": "y"], for: alice.id)
            try await store.remove(bob.id)
            try await store.remove(alice.id)
            var received: [CredentialStoreEvent] = []
            for _ in 0..<8 {
                guard let event = await iterator.next() else { break }
                received.append(event)
            }
            #expect(
                received == [
                    .added(alice.id), .defaultChanged(alice.id), .added(bob.id), .defaultChanged(bob.id),
                    .updated(alice.id), .removed(bob.id), .defaultChanged(nil), .removed(alice.id),
                ])
        }
    }

    @Test("a stored credential's description shows the account, never a token")
    func storedDescription() async throws {
        let store = CredentialStore.inMemory()
        let stored = try await store.add(Fixtures.token(user: "alice", deviceSecret: true))
        var dumped = ""
        dump(stored, to: &dumped)
        for text in [stored.description, String(reflecting: stored), dumped] {
            #expect(!text.contains("SECRET-"))
        }
        #expect(stored.description.contains("alice"))
    }

    @Test("updates from two stores on one SQLite file at once: every change lands, none undoes another")
    func concurrentUpdates() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let first = try await CredentialStore.sqlite(at: path)
        let second = try await CredentialStore.sqlite(at: path)
        let id = try await first.add(Fixtures.token(user: "alice")).id
        try await withThrowingTaskGroup { group in
            for index in 0..<40 {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask {
                    if index.isMultiple(of: 5) {
                        // A token change, as a refresh makes; it must not undo the tags.
                        try await store.update(id) { $0.token.accessToken = "SECRET-ACCESS-\(index)" }
                    } else {
                        try await store.update(id) { $0.metadata.tags["writer-\(index)"] = "x" }
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try #require(try await first.credential(for: id))
        #expect(stored.metadata.tags.count == 32)
        #expect(stored.version == 41)
        #expect(stored.token.accessToken?.hasPrefix("SECRET-ACCESS-") == true)
    }

    @Test("an update that changes nothing writes nothing and publishes nothing; a thrown change writes nothing")
    func noOpUpdate() async throws {
        let store = CredentialStore.inMemory()
        let alice = try await store.add(Fixtures.token(user: "alice"))
        var events = store.changes.makeAsyncIterator()
        let same = try await store.update(alice.id) { _ in }
        #expect(same.version == 1)
        await #expect(throws: StorageError.self) {
            try await store.update(alice.id) { credential throws(StorageError) in
                credential.metadata.tags["half"] = "done"
                throw StorageError(.databaseFailure, reason: "the change gave up")
            }
        }
        #expect(try await store.credential(for: alice.id)?.metadata.tags["half"] == nil)
        try await store.setTags(["role": "admin"], for: alice.id)
        #expect(await events.next() == .updated(alice.id))
        #expect(try await store.credential(for: alice.id)?.version == 2)
    }

    @Test(
        "accounts lists every account from what is in the clear, and agrees with the sealed credentials",
        arguments: Backend.allCases)
    func accountsListing(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"), tags: ["team": "blue"])
            var bobToken = Fixtures.token(user: "bob")
            bobToken.refreshToken = nil
            let bob = try await store.add(bobToken)
            try await store.update(bob.id) { $0.state.needsSignIn = true }
            let accounts = try await store.accounts()
            #expect(accounts.map(\.id) == [alice.id, bob.id])
            #expect(accounts.first?.metadata == alice.metadata)
            #expect(accounts.first?.accessTokenExpiresAt == alice.token.expiresAt)
            #expect(accounts.first?.hasRefreshToken == true)
            #expect(accounts.last?.hasRefreshToken == false)
            #expect(accounts.last?.needsSignIn == true)
            #expect(try await store.find(where: { $0.tags["team"] == "blue" }).map(\.id) == [alice.id])
        }
    }

    @Test("setTags refuses Latchkey's own prefix and never wipes Latchkey's state", arguments: Backend.allCases)
    func reservedTags(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alice = try await store.add(Fixtures.token(user: "alice"), tags: ["team": "blue"])
            try await store.update(alice.id) { $0.state.needsSignIn = true }
            let error = await #expect(throws: StorageError.self) {
                try await store.setTags(["latchkey.needs-sign-in": "false"], for: alice.id)
            }
            #expect(error?.code == .reservedTag)
            await #expect(throws: StorageError.self) {
                try await store.add(Fixtures.token(user: "bob"), tags: ["latchkey.anything": "x"])
            }
            try await store.setTags(["team": "red"], for: alice.id)
            let stored = try #require(try await store.credential(for: alice.id))
            #expect(stored.metadata.tags == ["team": "red"])
            #expect(stored.state.needsSignIn)
            #expect(try await store.accounts().first?.needsSignIn == true)
        }
    }
}
