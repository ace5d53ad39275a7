import Foundation
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// A SQLite store keeps the credentials it read while nothing changed, and never hands one out
/// after a change is visible: made by another process, another store on the file, or itself.
@Suite("SQLite reads served from memory")
struct ReadCacheTests {
    func token(_ value: String) -> Token {
        Token(
            accessToken: value, refreshToken: "rt", issuedAt: Date(), expiresAt: Date().addingTimeInterval(3_600),
            provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "worker"))
    }

    @Test("another process's access token sees a refresh and a sign-out here at its next call")
    func acrossProcesses() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let id = try await store.add(token("at-1")).id
        let watcher = try await ChildProcess.start(
            Executables.url("latchkey-store-worker"), ["watch", path, id.rawValue])
        var asked = 0
        func ask() async throws -> String {
            asked += 1
            watcher.write("next\n")
            let output = try await watcher.standardOutput { $0.split(separator: "\n").count >= asked }
            return String(output.split(separator: "\n").last ?? "")
        }
        #expect(try await ask() == "token at-1")
        #expect(try await ask() == "token at-1", "read again, from memory")
        _ = try await store.update(id, token: token("at-2"))
        #expect(try await ask() == "token at-2", "a refresh here is seen there")
        #expect(try await ask() == "token at-2")
        let signOut = await store.signOut(.account(id), options: SignOutOptions(revokeTokens: false))
        let complete = if case .complete = signOut { true } else { false }
        #expect(complete, "\(signOut)")
        #expect(try await ask() == "gone", "a sign-out here is seen there")
        let result = try await watcher.finish()
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test("two stores on one file, and a store's own writes: every read after a change sees it")
    func sameProcess() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let a = try await CredentialStore.sqlite(at: path)
        let b = try await CredentialStore.sqlite(at: path)
        let id = try await a.add(token("at-1")).id
        for round in 2...20 {
            #expect(try await a.credential(for: id)?.token.accessToken == "at-\(round - 1)")
            let writer = round.isMultiple(of: 2) ? b : a
            _ = try await writer.update(id, token: token("at-\(round)"))
            #expect(try await a.credential(for: id)?.token.accessToken == "at-\(round)")
            #expect(try await b.credential(for: id)?.token.accessToken == "at-\(round)")
        }
        #expect(try await b.remove(id))
        #expect(try await a.credential(for: id) == nil)
    }

    @Test("a listing, and find(where:), see an account another store added or removed")
    func listings() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let a = try await CredentialStore.sqlite(at: path)
        let b = try await CredentialStore.sqlite(at: path)
        let first = try await a.add(token("at-1")).id
        #expect(try await a.accounts().map(\.id) == [first])
        #expect(try await a.accounts().map(\.id) == [first], "listed again, from memory")
        let second = try await b.add(token("at-2")).id
        #expect(try await a.accounts().map(\.id) == [first, second])
        #expect(try await a.find(where: { _ in true }).map(\.id) == [first, second])
        #expect(try await b.remove(first))
        #expect(try await a.find(where: { _ in true }).map(\.id) == [second])
        let third = try await a.add(token("at-3")).id
        #expect(try await a.accounts().map(\.id) == [second, third], "its own add")
    }

    @Test("a closed store answers no read from memory")
    func closed() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let storage = try await SQLiteCredentialStorage.open(path: folder.file("credentials.sqlite"))
        let store = CredentialStore(storage: storage)
        let id = try await store.add(token("at-1")).id
        #expect(try await store.credential(for: id)?.token.accessToken == "at-1")
        try storage.close()
        await #expect(throws: StorageError.self) { try await store.credential(for: id) }
    }

    @Test("callers that read at once share a read, and none started after a change gets what was there before")
    func concurrentReaders() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let reader = try await CredentialStore.sqlite(at: path)
        let writer = try await CredentialStore.sqlite(at: path)
        let id = try await writer.add(token("at-0")).id
        for round in 1...40 {
            // Readers start while another store writes: each sees the old token or the new one.
            try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<10 { group.addTask { try await reader.credential(for: id)?.token.accessToken } }
                group.addTask {
                    _ = try await writer.update(id, token: token("at-\(round)"))
                    return nil
                }
                for try await seen in group {
                    if let seen { #expect(seen == "at-\(round - 1)" || seen == "at-\(round)") }
                }
            }
            // Readers started after the write ended: all see it.
            let after = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 { group.addTask { try await reader.credential(for: id)?.token.accessToken } }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(after.allSatisfy { $0 == "at-\(round)" }, "round \(round): \(after)")
        }
    }
}
