import Foundation
import Latchkey
import LatchkeySQLite
import Testing

/// Several processes on one SQLite store, and processes killed in the middle of writing.
@Suite("SQLite store across processes", .serialized)
struct MultiProcessStoreTests {
    let worker = Executables.url("latchkey-store-worker")

    func committedIDs(_ output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix("committed ") ? String(line.dropFirst("committed ".count)) : nil
        }
    }

    @Test("two processes adding 200 credentials each at once lose nothing")
    func twoWriters() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let first = try ChildProcess(worker, [path, "200", "first"])
        let second = try ChildProcess(worker, [path, "200", "second"])
        async let firstResult = first.finish()
        async let secondResult = second.finish()
        let (a, b) = await (firstResult, secondResult)
        #expect(a.status == 0)
        #expect(b.status == 0)
        let reported = committedIDs(a.output) + committedIDs(b.output)
        #expect(reported.count == 400)

        let stored = try await SQLiteCredentialStorage(path: path).all()
        #expect(stored.count == 400)
        #expect(Set(stored.map(\.id.rawValue)) == Set(reported))
        #expect(stored.filter { $0.metadata.tags["worker"] == "first" }.count == 200)
        #expect(stored.filter { $0.metadata.tags["worker"] == "second" }.count == 200)
        // Every token opens and is the one its process wrote.
        for credential in stored {
            let label = try #require(credential.metadata.tags["worker"])
            let index = try #require(credential.metadata.tags["index"])
            #expect(credential.token.accessToken == "at-\(label)-\(index)")
        }
    }

    @Test("a writer killed with SIGKILL leaves every committed credential intact (20 rounds)")
    func killedWriters() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        var committed: Set<String> = []
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            // Two writers at once, so the kill can land while the other holds the lock.
            let victim = try ChildProcess(worker, [path, "0", "victim\(round)"])
            let bystander = try ChildProcess(worker, [path, "25", "bystander\(round)"])
            try await Task.sleep(for: .milliseconds(Int.random(in: 80...300, using: &generator)))
            victim.kill(signal: SIGKILL)
            let (victimResult, bystanderResult) = await (victim.finish(), bystander.finish())
            #expect(victimResult.status == SIGKILL || victimResult.status == 9, "round \(round)")
            #expect(bystanderResult.status == 0, "round \(round)")
            committed.formUnion(committedIDs(victimResult.output))
            committed.formUnion(committedIDs(bystanderResult.output))

            let stored = try await SQLiteCredentialStorage(path: path).all()
            let storedIDs = stored.map(\.id.rawValue)
            #expect(Set(storedIDs).count == storedIDs.count, "round \(round): duplicated rows")
            let missing = committed.subtracting(storedIDs)
            #expect(missing.isEmpty, "round \(round): \(missing.count) committed credentials lost")
            // At most one write per killed process can commit without having been reported.
            #expect(stored.count <= committed.count + round + 1, "round \(round)")
        }
        #expect(committed.count > 20 * 25)
    }
}
