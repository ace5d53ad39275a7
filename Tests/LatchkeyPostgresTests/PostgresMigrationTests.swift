import Crypto
import Foundation
import LatchkeyPostgres
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

/// Instances that open one new database at the same moment all create and migrate its schema,
/// whichever of PostgreSQL's catalog races each meets.
@Suite("PostgreSQL store: instances opening a new database at once", .enabled(if: PostgresServer.isEnabled))
struct PostgresMigrationTests {
    @Test("6 clients open one new database at once, 15 times: every open succeeds, one version row")
    func concurrentOpens() async throws {
        let key = SymmetricKey(size: .bits256)
        for _ in 0..<15 {
            let url = try await PostgresServer.freshDatabase()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await PostgresServer.withClient(url) { client in
                            _ = try await PostgresCredentialStorage.open(
                                client: client, key: key, logger: Logger(label: "migration"),
                                timeout: PostgresServer.openTimeout)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await PostgresServer.withClient(url) { client in
                var count = 0
                for try await rows in try await client.query("SELECT count(*)::int FROM latchkey_schema").decode(
                    Int.self)
                {
                    count = rows
                }
                return count
            }
            #expect(rows == 1)
        }
    }
}
