import Crypto
import Foundation
import GRDB
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

@Suite("SQLite store")
struct SQLiteStoreTests {
    func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    func size(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }

    /// Every file in `folder` with its bytes, to show that a failed open changed nothing.
    /// SQLite's own WAL and shared-memory files are left out: SQLite creates them on opening.
    func snapshot(_ folder: TemporaryFolder) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path)
        where !name.hasSuffix("-wal") && !name.hasSuffix("-shm") {
            files[name] = FileManager.default.contents(atPath: folder.file(name))
        }
        return files
    }

    @Test("creates the folder 0700, the database and key file 0600, the key 32 bytes")
    func permissions() async throws {
        let root = try TemporaryFolder()
        defer { root.cleanUp() }
        let folder = root.file("nested/home")
        let path = (folder as NSString).appendingPathComponent("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        try await store.add(Fixtures.token(user: "alice"))
        #expect(try mode(folder) == 0o700)
        #expect(try mode(path) == 0o600)
        #expect(try mode(path + ".key") == 0o600)
        #expect(FileManager.default.contents(atPath: path + ".key")?.count == 32)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            #expect(try mode((folder as NSString).appendingPathComponent(name)) == 0o600, "\(name)")
        }
    }

    @Test("token values are sealed: no secret appears in any file of the store")
    func sealedAtRest() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let token = Fixtures.token(user: "alice", deviceSecret: true)
        do {
            let store = try await CredentialStore.sqlite(at: folder.file("credentials.sqlite"))
            try await store.add(token)
        }
        let secrets = [token.accessToken, token.refreshToken, token.deviceSecret, token.idToken].compactMap { $0 }
        for (name, bytes) in try snapshot(folder) {
            for secret in secrets {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(name) holds a token in the clear")
            }
        }
    }

    @Test("credentials and the default survive reopening; a default another store changes is seen at once")
    func persistence() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let alice = try await CredentialStore.sqlite(at: path).add(Fixtures.token(user: "alice"))
        let bob = try await CredentialStore.sqlite(at: path).add(Fixtures.token(user: "bob"), makeDefault: true)
        let reopened = try await CredentialStore.sqlite(at: path)
        #expect(try await reopened.all() == [alice, bob])
        #expect(try await reopened.default?.id == bob.id)
        // The default is kept between reads while the file is unchanged; another connection's
        // commit (another process, as `latchkey use` is) is seen by the next read.
        let other = try await CredentialStore.sqlite(at: path)
        try await other.setDefault(alice.id)
        #expect(try await reopened.default?.id == alice.id)
        try await other.setDefault(nil)
        #expect(try await reopened.default == nil)
        try await reopened.setDefault(bob.id)
        #expect(try await reopened.default?.id == bob.id)
    }

    @Test("a key the caller passes in seals the store; no key file is written")
    func callerKey() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let key = SymmetricKey(size: .bits256)
        let alice = try await CredentialStore.sqlite(at: path, key: .key(key)).add(Fixtures.token(user: "alice"))
        #expect(!FileManager.default.fileExists(atPath: path + ".key"))
        #expect(try await CredentialStore.sqlite(at: path, key: .key(key)).all() == [alice])
        let error = #expect(throws: StorageError.self) {
            _ = try SQLiteCredentialStorage(path: path, key: .key(SymmetricKey(size: .bits128)))
        }
        #expect(error?.code == .invalidKeyFile)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
    }

    @Test("a corrupt database is reported with its path and left untouched")
    func corruptDatabase() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes.replaceSubrange(0..<16, with: Data("this is garbage!".utf8))
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try snapshot(folder)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .corruptDatabase)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.path == path)
        #expect(error?.description.contains(path) == true)
        #expect(try snapshot(folder) == before)
    }

    @Test("a database with damaged pages is reported, not wiped")
    func damagedPages() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        do {
            let storage = try SQLiteCredentialStorage(path: path)
            let store = CredentialStore(storage: storage)
            for index in 0..<50 { try await store.add(Fixtures.token(user: "user\(index)")) }
            try storage.close()
        }

        var bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.count > 8192)
        // Overwrite every page after the first two with noise.
        bytes.replaceSubrange(8192..<bytes.count, with: Data(repeating: 0xA5, count: bytes.count - 8192))
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try snapshot(folder)
        let error = await #expect(throws: StorageError.self) {
            _ = try await SQLiteCredentialStorage(path: path).all()
        }
        #expect(error?.code == .corruptDatabase)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(try snapshot(folder) == before)
    }

    @Test("a wrong key is reported, naming the key file, and nothing changes")
    func wrongKeyFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let alice = try await Fixtures.addClosed(user: "alice", to: path)
        let original = FileManager.default.contents(atPath: path + ".key")
        try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: path + ".key"))
        let before = try snapshot(folder)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .wrongKey)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.path == path + ".key")
        // SQLite may move committed pages from the WAL into the database file when the failed
        // connection closes; what must hold is that the key is untouched and nothing is lost.
        #expect(try snapshot(folder)["credentials.sqlite.key"] == before["credentials.sqlite.key"])
        let given = #expect(throws: StorageError.self) {
            _ = try SQLiteCredentialStorage(path: path, key: .key(SymmetricKey(size: .bits256)))
        }
        #expect(given?.code == .wrongKey)
        #expect(given?.description.contains(path) == true)
        try #require(original).write(to: URL(fileURLWithPath: path + ".key"))
        #expect(try await SQLiteCredentialStorage(path: path).all() == [alice])
    }

    @Test("a truncated key file is reported, naming it, and nothing changes")
    func truncatedKeyFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        let key = try #require(FileManager.default.contents(atPath: path + ".key"))
        try key.prefix(20).write(to: URL(fileURLWithPath: path + ".key"))
        let before = try snapshot(folder)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .invalidKeyFile)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.path == path + ".key")
        #expect(error?.description.contains("20 bytes") == true)
        #expect(try snapshot(folder) == before)
        // Restoring the key brings every credential back.
        try key.write(to: URL(fileURLWithPath: path + ".key"))
        #expect(try await SQLiteCredentialStorage(path: path).all().count == 1)
    }

    @Test("a missing key file for an existing database is reported; no new key is made")
    func missingKeyFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        try FileManager.default.removeItem(atPath: path + ".key")
        let before = try snapshot(folder)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .missingKeyFile)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.path == path + ".key")
        #expect(try snapshot(folder) == before)
    }

    @Test("an unreadable folder is reported, naming it, and nothing is created")
    func unreadableFolder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        let before = try snapshot(folder)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: folder.path)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        #expect(error?.code == .folderNotAccessible)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.path == folder.path)
        #expect(error?.description.contains(folder.path) == true)
        #expect(try snapshot(folder) == before)
    }

    @Test("a path whose folder is a file is reported")
    func folderIsAFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder.file("plain")))
        let error = #expect(throws: StorageError.self) {
            _ = try SQLiteCredentialStorage(path: folder.file("plain/credentials.sqlite"))
        }
        #expect(error?.code == .folderNotAccessible)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
    }

    @Test("a database written by a newer schema is refused, not migrated down")
    func newerSchema() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        try await Fixtures.addClosed(user: "alice", to: path)
        let sqlite = try await ChildProcess.run(sqlite3, [path, "PRAGMA user_version = 99"])
        try #require(sqlite.status == 0, "sqlite3 is needed for this test: \(sqlite.stderr)")
        let error = #expect(throws: StorageError.self) { _ = try SQLiteCredentialStorage(path: path) }
        #expect(error?.code == .unsupportedSchema)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
    }

    @Test("a damaged record is left as it is and reported by id; every other record keeps working")
    func damagedRecord() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let alice = try await store.add(Fixtures.token(user: "alice"))
        let bob = try await store.add(Fixtures.token(user: "bob"))
        try await damage(path, "UPDATE credential SET sealed_token = x'00112233' WHERE id = '\(alice.id)'")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try await store.all() == [bob])
        let damaged = try await store.damagedRecords()
        #expect(damaged.map(\.id) == [alice.id.rawValue])
        #expect(damaged.first?.kind == .credential)
        let error = await #expect(throws: StorageError.self) { _ = try await store.credential(for: alice.id) }
        #expect(error?.code == .corruptRecord)
        #expect(error?.isRetryable == false, "retrying cannot fix a store that needs a person")
        #expect(error?.description.contains(alice.id.rawValue) == true)
        #expect(try await store.credential(for: bob.id) == bob)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "reading changed nothing")
        // Removing it on purpose works without reading it.
        #expect(try await store.remove(alice.id))
        #expect(try await store.damagedRecords().isEmpty)
    }

    @Test("an edited row does not open: metadata, indexed fields and the default marker are bound to the seal")
    func editedRows() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let alice = try await store.add(Fixtures.token(user: "alice"))
        let bob = try await store.add(Fixtures.token(user: "bob"))
        let carol = try await store.add(Fixtures.token(user: "carol"))
        // Bob's row now claims alice's email, in the index and in the metadata: looking alice up
        // by email must never hand out Bob's token.
        try await damage(
            path,
            """
            UPDATE credential SET email = 'alice@example.com',
                metadata = replace(metadata, 'bob@example.com', 'alice@example.com') WHERE id = '\(bob.id)'
            """)
        // Carol's indexed username is edited, her sealed metadata is not.
        try await damage(path, "UPDATE credential SET username = 'alice' WHERE id = '\(carol.id)'")
        #expect(try await store.find(.email("alice@example.com")).map(\.id) == [alice.id])
        #expect(try await store.find(.username("alice")).map(\.id) == [alice.id])
        #expect(Set(try await store.damagedRecords().map(\.id)) == [bob.id.rawValue, carol.id.rawValue])

        // The default marker is sealed too: pointing it elsewhere by hand does not work, however
        // recently the marker was read.
        #expect(try await store.default == alice)
        try await damage(
            path, "UPDATE setting SET value = CAST('\(carol.id)' AS BLOB) WHERE name = 'default_credential'")
        let error = await #expect(throws: StorageError.self) { _ = try await store.default }
        #expect(error?.code == .corruptRecord)
        #expect(try await store.damagedRecords().contains { $0.kind == .defaultMarker })
        try await store.setDefault(alice.id)
        #expect(try await store.default == alice)
    }

    @Test("a store of schema version 2 (the last release) opens: its rows are sealed again, none lost")
    func upgradeFromVersion2() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let key = SymmetricKey(size: .bits256)
        let store = try await CredentialStore.sqlite(at: path, key: .key(key))
        let alice = try await store.add(Fixtures.token(user: "alice"))
        let bob = try await store.add(Fixtures.token(user: "bob"))
        try await store.setDefault(bob.id)
        let entry = OutboxEntry(
            provider: Fixtures.provider, action: .revoke(.refreshToken), payload: .token("SECRET-QUEUED"),
            account: "alice",
            tokenExpiresAt: nil, createdAt: Date(timeIntervalSince1970: 1_800_000_000), attempts: 1,
            nextAttemptAt: Date(timeIntervalSince1970: 1_800_000_000), lastError: nil)
        try await store.outbox.enqueue([entry], limit: 10)
        // Turn the file back into what version 2 wrote: seals bound to the id only, the default
        // marker in the clear, no version column, lease table, permanent-failure or claim column.
        let sealer = Sealer(key: key)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            for credential in [alice, bob] {
                let token = try JSONEncoder().encode(credential.token)
                try db.execute(
                    sql: "UPDATE credential SET sealed_token = ? WHERE id = ?",
                    arguments: [
                        try sealer.seal(token, context: SealContext.legacyCredential(credential.id.rawValue)),
                        credential.id.rawValue,
                    ])
            }
            try db.execute(
                sql: "UPDATE outbox SET sealed_token = ? WHERE id = ?",
                arguments: [
                    try sealer.seal(Data("SECRET-QUEUED".utf8), context: SealContext.legacyOutbox(entry.id.uuidString)),
                    entry.id.uuidString,
                ])
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = 'default_credential'", arguments: [bob.id.rawValue])
            // Versions before 7 kept Latchkey's state in the application's tags.
            var tagged = alice.metadata
            tagged.tags = ["latchkey.needs-sign-in": "true", "latchkey.rejected-access-token": "0011", "team": "blue"]
            try db.execute(
                sql: "UPDATE credential SET metadata = ? WHERE id = ?",
                arguments: [String(decoding: try JSONEncoder().encode(tagged), as: UTF8.self), alice.id.rawValue])
            try db.execute(sql: "ALTER TABLE outbox DROP COLUMN waits_for")
            try db.execute(sql: "ALTER TABLE credential DROP COLUMN needs_sign_in")
            try db.execute(sql: "ALTER TABLE credential DROP COLUMN rejected_access_token")
            try db.execute(sql: "ALTER TABLE outbox DROP COLUMN failed_permanently")
            try db.execute(sql: "ALTER TABLE outbox DROP COLUMN claimed_until")
            try db.execute(sql: "ALTER TABLE outbox DROP COLUMN claimed_by")
            try db.execute(sql: "ALTER TABLE outbox DROP COLUMN failure_cause")
            try db.execute(sql: "ALTER TABLE credential DROP COLUMN version")
            for column in [
                "name", "client_id", "tags", "access_token_expires_at", "has_access_token", "has_refresh_token",
            ] {
                try db.execute(sql: "ALTER TABLE credential DROP COLUMN \(column)")
            }
            try db.execute(sql: "DROP TABLE refresh_lease")
            for table in ["web_session", "web_pending_sign_in", "logout_token_seen"] {
                try db.execute(sql: "DROP TABLE \(table)")
            }
            try db.execute(sql: "PRAGMA user_version = 2")
        }
        try queue.close()

        let upgraded = try await CredentialStore.sqlite(at: path, key: .key(key))
        #expect(try await upgraded.damagedRecords().isEmpty)
        #expect(try await upgraded.all().map(\.token) == [alice.token, bob.token])
        // The state moved out of the tags into its own fields; the application's tag stayed.
        let migrated = try #require(try await upgraded.credential(for: alice.id))
        #expect(migrated.state == CredentialState(needsSignIn: true, rejectedAccessToken: "0011"))
        #expect(migrated.metadata.tags == ["team": "blue"])
        #expect(try await upgraded.accounts().first?.needsSignIn == true)
        var expected = alice.metadata
        expected.tags = ["team": "blue"]
        #expect(try await upgraded.default?.id == bob.id)
        #expect(try await upgraded.outboxEntries().map(\.payload.token) == ["SECRET-QUEUED"])
        #expect(try await upgraded.all().allSatisfy { $0.version == 1 })
        #expect(
            try await upgraded.accounts().map(\.metadata) == [expected, bob.metadata], "listing columns filled")
        #expect(try await upgraded.accounts().allSatisfy { $0.hasRefreshToken && $0.accessTokenExpiresAt != nil })
    }

    /// Changes the database behind the store's back.
    func damage(_ path: String, _ sql: String) async throws {
        let sqlite = try await ChildProcess.run(sqlite3, [path, sql])
        try #require(sqlite.status == 0, "sqlite3 is needed for this test: \(sqlite.stderr)")
    }
}

/// The sqlite3 shell, for tests that damage a database behind the store's back.
let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
