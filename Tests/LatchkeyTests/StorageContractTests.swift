import Foundation
import Latchkey
public import LatchkeySQLite
public import LatchkeyStorageTesting
import LatchkeyTestSupport
import Testing

/// The shipped storage contract (`LatchkeyStorageTesting`), run against each of Latchkey's
/// backends, as a user runs it against theirs.
@Suite("Storage contract")
struct StorageContractTests {
    @Test("in memory", arguments: StorageContract.checks)
    func memory(_ check: StorageContract.Check) async throws {
        try await check.run { InMemoryCredentialStorage() }
    }

    @Test("SQLite", arguments: StorageContract.checks)
    func sqlite(_ check: StorageContract.Check) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await check.run { try SQLiteCredentialStorage(path: folder.file("credentials.sqlite")) }
    }

    @Test("SQLite, a lease taken over", arguments: StorageContract.takeoverChecks)
    func sqliteTakeover(_ check: StorageContract.TakeoverCheck) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await check.run { try SQLiteCredentialStorage(path: folder.file("credentials.sqlite")) }
    }
}

extension SQLiteCredentialStorage: LeaseTakeover {
    public func takeOverHeldLeases() async throws { try await handLeasesToAnotherHolder() }
}
