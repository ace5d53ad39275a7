import Crypto
import Foundation
import Latchkey
import LatchkeyPostgres
import LatchkeyStorageTesting
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

/// What the fleet store rests on is checked, not assumed: it keeps its contract on a server
/// whose advisory locks do nothing (as CockroachDB's stubs always succeed), and refuses to open
/// where a lease would not exclude.
@Suite("PostgreSQL store: exclusion that does not rest on advisory locks", .enabled(if: PostgresServer.isEnabled))
struct PostgresExclusionTests {
    /// A new database whose advisory-lock functions always succeed: functions of the same names
    /// in a schema searched before `pg_catalog`.
    static func stubbedDatabase() async throws -> String {
        let url = try await PostgresServer.freshDatabase()
        let name = try #require(URLComponents(string: url)?.path.dropFirst())
        try await PostgresServer.withClient(url) { client in
            for statement in [
                "CREATE SCHEMA stub",
                "CREATE FUNCTION stub.pg_try_advisory_lock(bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
                "CREATE FUNCTION stub.pg_try_advisory_xact_lock(bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
                "CREATE FUNCTION stub.pg_advisory_lock(bigint) RETURNS void LANGUAGE sql AS ''",
                "CREATE FUNCTION stub.pg_advisory_xact_lock(bigint) RETURNS void LANGUAGE sql AS ''",
                "CREATE FUNCTION stub.pg_advisory_unlock(bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
                "ALTER DATABASE \(name) SET search_path = stub, pg_catalog, public",
            ] {
                try await client.query(PostgresQuery(unsafeSQL: statement))
            }
        }
        return url
    }

    @Test("the stub is in force: two sessions both 'take' one advisory lock")
    func stubInForce() async throws {
        let url = try await Self.stubbedDatabase()
        let logger = Logger(label: "stub")
        let taken = try await PostgresServer.withClient(url) { client in
            try await client.withConnection { first in
                try await client.withConnection { second in
                    var answers: [Bool] = []
                    for connection in [first, second] {
                        for try await taken in try await connection.query(
                            "SELECT pg_try_advisory_lock(42)", logger: logger
                        )
                        .decode(Bool.self) {
                            answers.append(taken)
                        }
                    }
                    return answers
                }
            }
        }
        #expect(taken == [true, true])
    }

    @Test(
        "with advisory locks that always succeed, the store keeps the storage contract",
        arguments: StorageContract.checks)
    func contract(_ check: StorageContract.Check) async throws {
        let url = try await Self.stubbedDatabase()
        try await PostgresServer.withClient(url) { client in
            try await check.run {
                try await PostgresCredentialStorage.open(
                    client: client, key: SymmetricKey(size: .bits256), timeout: PostgresServer.openTimeout)
            }
        }
    }

    @Test("a server on which a second session can take a held lease is refused at open, with the cause and the fix")
    func leaseThatDoesNotExclude() async throws {
        let url = try await PostgresServer.freshDatabase()
        let key = SymmetricKey(size: .bits256)
        try await PostgresServer.withStore(key: key, url: url) { _, _, _ in }
        // Each insert first removes the row it would meet: a take never finds the lease held.
        try await PostgresServer.withClient(url) { client in
            try await client.query(
                """
                CREATE FUNCTION forget_lease() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN DELETE FROM latchkey_lease WHERE id = NEW.id; RETURN NEW; END $$
                """)
            try await client.query(
                "CREATE TRIGGER forget BEFORE INSERT ON latchkey_lease FOR EACH ROW EXECUTE FUNCTION forget_lease()")
        }
        let refused = await #expect(throws: StorageError.self) {
            try await PostgresServer.withClient(url) { client in
                _ = try await PostgresCredentialStorage.open(
                    client: client, key: key, timeout: PostgresServer.openTimeout)
            }
        }
        #expect(refused?.code == .unsupported)
        #expect(refused?.reason.contains("two sessions take one credential's lease") == true)
        #expect(refused?.reason.contains("PgBouncer") == true)
    }

    @Test("PgBouncer in statement mode is refused at open, naming the modes that work")
    func statementPooling() async throws {
        let direct = try await PostgresServer.freshDatabase()
        let pooler = try #require(
            PostgresServer.environment?.statementPoolerURL, "no PgBouncer: restart scripts/providers/postgres")
        var components = try #require(URLComponents(string: pooler))
        components.path = try #require(URLComponents(string: direct)?.path)
        let url = try #require(components.string)
        let refused = await #expect(throws: StorageError.self) {
            try await PostgresServer.withClient(url) { client in
                _ = try await PostgresCredentialStorage.open(
                    client: client, key: SymmetricKey(size: .bits256), timeout: PostgresServer.openTimeout)
            }
        }
        #expect(refused?.code == .unsupported)
        #expect(refused?.reason.contains("session or transaction mode") == true)
    }
}
