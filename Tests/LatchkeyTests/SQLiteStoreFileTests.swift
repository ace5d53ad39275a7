import Crypto
import Foundation
import GRDB
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// The SQLite store and the files it did not create: what it trusts, and what it refuses.
@Suite("SQLite store files")
struct SQLiteStoreFileTests {
    /// The file helpers of the store's other tests.
    let files = SQLiteStoreTests()

    // MARK: Files the store did not create

    @Test("a folder, database or key file open to other users is refused, naming it and the fix")
    func openToOthers() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let home = folder.file("home")
        let path = (home as NSString).appendingPathComponent("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        func refused(_ file: String, _ fix: String) throws {
            let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
            #expect(error?.code == .insecureFile)
            #expect(error?.isRetryable == false)
            #expect(error?.path == file)
            #expect(error?.description.contains(fix) == true, "\(error?.description ?? "")")
        }
        for (file, mode, fix) in [
            (home, 0o777, "chmod go-w"), (path, 0o666, "chmod go-w"), (path + ".key", 0o644, "chmod 600"),
            (path + ".key", 0o640, "chmod 600"),
        ] {
            let safe = try files.mode(file)
            chmod(file, mode_t(mode))
            try refused(file, fix)
            chmod(file, mode_t(safe))
        }
        #expect(try await SQLiteCredentialStorage(path: path).all().count == 1, "and trusted again once fixed")
        // A file of another user's, when this test may give one away.
        if geteuid() == 0 {
            chown(path + ".key", 65_534, 65_534)
            try refused(path + ".key", "chown")
            chown(path + ".key", 0, 0)
        }
    }

    @Test("a key file planted before its database is never adopted; nothing is left behind")
    func plantedKey() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        // Known bytes, mode 0600, the user's own: everything right but its history.
        let planted = Data(repeating: 7, count: 32)
        #expect(
            FileManager.default.createFile(
                atPath: path + ".key", contents: planted, attributes: [.posixPermissions: 0o600]))
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .insecureFile)
        #expect(error?.path == path + ".key")
        #expect(!FileManager.default.fileExists(atPath: path), "no database file was left behind")
        #expect(FileManager.default.contents(atPath: path + ".key") == planted, "the planted file is not touched")
        // A key the caller names on purpose may well exist before the database.
        let store = try SQLiteCredentialStorage(path: path, key: .keyFile(path + ".key"))
        try await store.insert(
            StoredCredential(
                id: CredentialID(), token: Fixtures.token(user: "alice"),
                metadata: CredentialMetadata(issuer: Fixtures.provider.issuer, clientID: "c"), createdAt: Date(),
                updatedAt: Date()))
        #expect(try await store.all().count == 1)
    }

    @Test("an empty database beside its key is damaged: reported, nothing written over it")
    func emptyDatabaseBesideKey() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try SQLiteCredentialStorage(path: path).close()
        let key = try #require(FileManager.default.contents(atPath: path + ".key"))
        for file in [path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        #expect(truncate(path, 0) == 0)
        // Written a minute ago: no creator is between its key and its schema any more.
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: path + ".key")
        let damaged = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(damaged?.code == .corruptDatabase)
        #expect(damaged?.path == path)
        #expect(damaged?.description.contains("changes nothing") == true)
        #expect(try files.size(path) == 0, "no schema written over it")
        #expect(FileManager.default.contents(atPath: path + ".key") == key)
        // A key written a moment ago: its creator is at work; opening waits for it.
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path + ".key")
        let busy = await #expect(throws: StorageError.self) {
            _ = try await SQLiteCredentialStorage.open(path: path, busyTimeout: .milliseconds(100))
        }
        #expect(busy?.code == .busy)
        #expect(try files.size(path) == 0)
    }

    @Test("a row's sealed tokens and metadata put back from an older copy, under the current version, do not open")
    func rolledBackRow() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let alice = try await store.add(Fixtures.token(user: "alice"), tags: ["team": "red"])
        try await files.damage(path, "CREATE TABLE copy AS SELECT * FROM credential")
        try await store.setTags(["team": "blue"], for: alice.id)
        // Everything sealed and bound to it comes back from the copy; the version stays current.
        try await files.damage(
            path,
            """
            UPDATE credential SET sealed_token = (SELECT sealed_token FROM copy),
                metadata = (SELECT metadata FROM copy), tags = (SELECT tags FROM copy)
            """)
        #expect(try await store.all().isEmpty)
        #expect(try await store.damagedRecords().map(\.id) == [alice.id.rawValue])
    }

    @Test("a whole older row put back (version 1 over 3), or a deleted one, is damaged and never used")
    func wholeRowRolledBack() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let alice = try await store.add(Fixtures.token(user: "alice"), tags: ["team": "red"])
        let bob = try await store.add(Fixtures.token(user: "bob"))
        try await files.damage(path, "CREATE TABLE copy AS SELECT * FROM credential")
        try await store.setTags(["team": "blue"], for: alice.id)
        try await store.setTags(["team": "green"], for: alice.id)
        try await files.damage(
            path,
            "DELETE FROM credential WHERE id = '\(alice.id)'; INSERT INTO credential SELECT * FROM copy WHERE id = '\(alice.id)'"
        )
        await #expect(throws: StorageError.self) { _ = try await store.credential(for: alice.id) }
        let damaged = try await store.damagedRecords()
        #expect(damaged.map(\.id) == [alice.id.rawValue])
        #expect(damaged.first?.reason.contains("version 1, the store last wrote version 3") == true)
        #expect(try await store.all().map(\.id) == [bob.id])
        // Its record written down to match is altered without the store's key.
        try await files.damage(path, "UPDATE credential_version SET version = 1 WHERE id = '\(alice.id)'")
        #expect(try await store.damagedRecords().first?.reason.contains("altered") == true)
        try await files.damage(path, "DELETE FROM credential_version WHERE id = '\(alice.id)'")
        #expect(try await store.damagedRecords().first?.reason.contains("no record") == true)

        // A credential signed out and removed does not come back from a copy.
        #expect(try await store.remove(bob.id))
        try await files.damage(path, "INSERT INTO credential SELECT * FROM copy WHERE id = '\(bob.id)'")
        await #expect(throws: StorageError.self) { _ = try await store.credential(for: bob.id) }
        let reasons = try await store.damagedRecords().map(\.reason)
        #expect(reasons.contains { $0.contains("deleted at version 1") })
        #expect(try await store.all().isEmpty)
    }

    @Test("a database or key file that is a symbolic link is refused")
    func symbolicLinks() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        let elsewhere = folder.file("elsewhere")
        for file in [path, path + ".key"] {
            try FileManager.default.moveItem(atPath: file, toPath: elsewhere)
            try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: elsewhere)
            let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
            #expect(error?.code == .insecureFile)
            #expect(error?.path == file)
            try FileManager.default.removeItem(atPath: file)
            try FileManager.default.moveItem(atPath: elsewhere, toPath: file)
        }
        #expect(try await SQLiteCredentialStorage(path: path).all().count == 1)
    }

    @Test("a key rotation seals everything again in one step; a rotation cut short is completed on open")
    func keyRotation() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let alice = try await store.add(Fixtures.token(user: "alice"))
        try await store.setDefault(alice.id)
        try await store.outbox.enqueue(
            [
                OutboxEntry(
                    provider: Fixtures.provider, action: .revoke(.refreshToken), payload: .token("SECRET-QUEUED"),
                    account: "alice",
                    tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(), lastError: nil)
            ],
            limit: 10)
        let oldKey = try #require(FileManager.default.contents(atPath: path + ".key"))
        try (store.storage as? SQLiteCredentialStorage)?.close()

        let newKey = SymmetricKey(size: .bits256)
        try await SQLiteCredentialStorage.rotateKey(path: path, to: newKey)
        let keyFile = try #require(FileManager.default.contents(atPath: path + ".key"))
        #expect(keyFile == newKey.withUnsafeBytes { Data($0) })
        #expect(try files.mode(path + ".key") == 0o600)
        #expect(!FileManager.default.fileExists(atPath: path + ".key.next"))
        let reopened = try SQLiteCredentialStorage(path: path)
        #expect(try await reopened.all().map(\.token) == [alice.token])
        #expect(try await reopened.defaultCredentialID() == alice.id)
        #expect(try await reopened.outboxEntries().map(\.payload.token) == ["SECRET-QUEUED"])
        #expect(try await reopened.damagedRecords().isEmpty)
        try reopened.close()
        let old = #expect(throws: StorageError.self) {
            _ = try SQLiteCredentialStorage(path: path, key: .key(SymmetricKey(data: oldKey)))
        }
        #expect(old?.code == .wrongKey)

        // Cut short: committed, but the process died before the key file was replaced.
        try await SQLiteCredentialStorage.rotateKey(path: path, to: SymmetricKey(size: .bits256))
        let newest = try #require(FileManager.default.contents(atPath: path + ".key"))
        try FileManager.default.moveItem(atPath: path + ".key", toPath: path + ".key.next")
        #expect(
            FileManager.default.createFile(
                atPath: path + ".key", contents: keyFile, attributes: [.posixPermissions: 0o600]))
        #expect(try await SQLiteCredentialStorage(path: path).all().map(\.token) == [alice.token])
        #expect(FileManager.default.contents(atPath: path + ".key") == newest)
        #expect(!FileManager.default.fileExists(atPath: path + ".key.next"))
    }

    @Test("a key from a file descriptor, as base64 from a secret manager's pipe")
    func keyFromDescriptor() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let key = SymmetricKey(size: .bits256)
        func pipeHolding(_ key: SymmetricKey) throws -> Int32 {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            let text = key.withUnsafeBytes { Data($0) }.base64EncodedString() + "\n"
            _ = text.withCString { write(ends[1], $0, strlen($0)) }
            close(ends[1])
            return ends[0]
        }
        let store = try SQLiteCredentialStorage(path: path, key: .fileDescriptor(try pipeHolding(key)))
        try await store.insert(
            StoredCredential(
                id: CredentialID(), token: Fixtures.token(user: "alice"),
                metadata: CredentialMetadata(issuer: Fixtures.provider.issuer, clientID: "c"), createdAt: Date(),
                updatedAt: Date()))
        try store.close()
        #expect(!FileManager.default.fileExists(atPath: path + ".key"), "no key file is written")
        #expect(
            try await SQLiteCredentialStorage(path: path, key: .fileDescriptor(try pipeHolding(key))).all().count == 1)
        let wrong = #expect(throws: StorageError.self) {
            _ = try SQLiteCredentialStorage(
                path: path, key: .fileDescriptor(try pipeHolding(SymmetricKey(size: .bits256))))
        }
        #expect(wrong?.code == .wrongKey)
    }
}
