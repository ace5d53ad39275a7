import Crypto
import Foundation
import GRDB
import Latchkey
import LatchkeySQLite
import LatchkeySQLiteReader
import LatchkeyTestSupport
import Testing

/// The quick reader (SQLite's C API alone, for the tool's quick commands) reads what the store
/// wrote, and nothing it is not sure of.
@Suite("SQLite store reader")
struct SQLiteStoreReaderTests {
    func token(_ value: String) -> Token {
        Token(
            accessToken: value, refreshToken: "rt", issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600),
            provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "reader"))
    }

    @Test("it reads the default account, a credential and the listing as the store does")
    func readsWhatTheStoreWrote() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let first = try await store.add(
            token("at-1"),
            accountClaims: [
                "sub": .string("a"), "preferred_username": .string("alice"), "email": .string("alice@example.com"),
            ],
            tags: ["team": "blue"])
        let second = try await store.add(token("at-2"))
        try await store.setDefault(second.id)
        let reader = try SQLiteStoreReader(path: path, keyPath: path + ".key")
        let (defaultID, credential, accounts) = try reader.read { snapshot throws(SQLiteStoreReader.Unread) in
            (try snapshot.defaultCredentialID(), try snapshot.credential(first.id), try snapshot.accounts())
        }
        #expect(defaultID == second.id)
        #expect(credential == (try await store.credential(for: first.id)))
        #expect(accounts == (try await store.accounts()))
        #expect(
            try reader.read { snapshot throws(SQLiteStoreReader.Unread) in
                try snapshot.credential(CredentialID(rawValue: "none"))
            } == nil)
    }

    @Test("another key, another schema version, a damaged record or no store: unread, and nothing written")
    func unread() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let id = try await store.add(token("at-1")).id
        try await store.setDefault(id)
        // Another key.
        let other = folder.file("other.key")
        try Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).write(to: URL(fileURLWithPath: other))
        chmod(other, 0o600)
        #expect(throws: SQLiteStoreReader.Unread.self) {
            try SQLiteStoreReader(path: path, keyPath: other).read { _ throws(SQLiteStoreReader.Unread) in }
        }
        // A damaged record.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "UPDATE credential SET email = 'mallory@example.com'") }
        let reader = try SQLiteStoreReader(path: path, keyPath: path + ".key")
        #expect(throws: SQLiteStoreReader.Unread.self) {
            try reader.read { snapshot throws(SQLiteStoreReader.Unread) in try snapshot.credential(id) }
        }
        // A schema this reader does not know (an older store the full store migrates, or a newer one).
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 99") }
        #expect(throws: SQLiteStoreReader.Unread.self) {
            try reader.read { snapshot throws(SQLiteStoreReader.Unread) in try snapshot.defaultCredentialID() }
        }
        try queue.close()
        // No store: nothing is created.
        let missing = folder.file("missing.sqlite")
        #expect(throws: SQLiteStoreReader.Unread.self) {
            try SQLiteStoreReader(path: missing, keyPath: missing + ".key")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}
