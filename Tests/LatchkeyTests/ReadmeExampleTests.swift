import Foundation
import Latchkey
import LatchkeySQLite
import Testing

/// The README's library example, kept compiling and true.
@Suite("README examples")
struct ReadmeExampleTests {
    @Test("the store example runs as written")
    func storeExample() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let token = Fixtures.token(user: "alice")
        _ = try await CredentialStore.sqlite(at: folder.file("other.sqlite")).add(Fixtures.token(user: "bob"))

        // README: "Using the library"
        let store = try await CredentialStore.sqlite(at: folder.file("credentials.sqlite"))
        let stored = try await store.add(token, tags: ["team": "blue"])  // the first account becomes the default
        try await store.setDefault(stored.id)  // switch the active account
        let bob = try await store.find(.email("bob@example.com"))
        try await store.remove(stored.id)  // local only: the tokens stay valid on the server

        #expect(bob.isEmpty)
        #expect(try await store.default == nil)
    }
}
