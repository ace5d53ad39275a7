import Crypto
import Foundation
import Latchkey
import LatchkeyPostgres
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

/// Whether a suite whose outside server is missing must fail instead of being skipped (the
/// README's test command and CI set it).
let providersRequired = ProcessInfo.processInfo.environment["LATCHKEY_REQUIRE_PROVIDERS"] == "1"

/// The PostgreSQL server `scripts/providers/postgres start` left running, if any.
enum PostgresServer {
    struct Environment: Decodable, Sendable {
        var url: String
        /// The local server's process, when it is local: a file left by a stopped server is
        /// not a running one.
        var pid: Int32?
        /// PgBouncer before the server, in session and in transaction pooling mode.
        var sessionPoolerURL: String?
        var transactionPoolerURL: String?
        /// PgBouncer in statement pooling mode, which the store refuses.
        var statementPoolerURL: String?
    }

    /// How a fleet's instances reach the server.
    enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case direct = "directly"
        case sessionPooler = "through PgBouncer in session mode"
        case transactionPooler = "through PgBouncer in transaction mode"

        var testDescription: String { rawValue }
    }

    static var environmentFile: URL {
        if let path = ProcessInfo.processInfo.environment["LATCHKEY_POSTGRES_ENV"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".providers/postgres/env.json")
    }

    /// The running server's settings, or nil when none runs.
    static var environment: Environment? {
        guard let data = try? Data(contentsOf: environmentFile),
            let environment = try? JSONDecoder().decode(Environment.self, from: data),
            environment.pid.map({ kill($0, 0) == 0 }) ?? true
        else { return nil }
        return environment
    }

    /// Run when the server runs, or always when servers are required (then a missing one fails).
    static var isEnabled: Bool { providersRequired || environment != nil }

    static func require() throws -> Environment {
        try #require(environment, "PostgreSQL is not running: start it with scripts/providers/postgres start")
    }

    /// How long a test waits for a store to open: the library's default minute, stretched with
    /// the rest of the suite under the thread sanitizer.
    static var openTimeout: Duration { TestTiming.scaled(.seconds(60)) }

    /// The URL of a new, empty database of its own for one test, reached by `route` (the
    /// database is made directly).
    static func freshDatabase(via route: Route = .direct) async throws -> String {
        let environment = try require()
        let name = "latchkey_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        try await withClient(environment.url) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        let base: String? =
            switch route {
            case .direct: environment.url
            case .sessionPooler: environment.sessionPoolerURL
            case .transactionPooler: environment.transactionPoolerURL
            }
        let reached = try #require(base, "no PgBouncer: restart scripts/providers/postgres")
        var components = try #require(URLComponents(string: reached))
        components.path = "/\(name)"
        return try #require(components.string)
    }

    /// Runs `body` with a running client of the database at `url`.
    @discardableResult
    static func withClient<T: Sendable>(
        _ url: String, timeout: Duration = TestTiming.scaled(.seconds(10)),
        _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        var configuration = try PostgresCredentialStorage.clientConfiguration(url: url)
        configuration.options.connectTimeout = timeout
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// Runs `body` with a store over a new database (and its storage and client).
    @discardableResult
    static func withStore<T: Sendable>(
        key: SymmetricKey = SymmetricKey(size: .bits256), url: String? = nil,
        _ body: @Sendable (CredentialStore, PostgresCredentialStorage, PostgresClient) async throws -> T
    ) async throws -> T {
        let database: String
        if let url { database = url } else { database = try await freshDatabase() }
        return try await withClient(database) { client in
            // In the trace pass, the storage and the store log at trace level, and every line is
            // checked for the tokens the test handled.
            let storage = try await PostgresCredentialStorage.open(
                client: client, key: key, logger: TraceLog.logger("postgres"), timeout: openTimeout)
            return try await body(CredentialStore(storage: storage, logger: TraceLog.logger("store")), storage, client)
        }
    }
}

/// A key file for processes that share a store.
struct KeyFile {
    let folder: TemporaryFolder
    let key: SymmetricKey
    var path: String { folder.file("store.key") }

    init() throws {
        folder = try TemporaryFolder()
        key = SymmetricKey(size: .bits256)
        let text = key.withUnsafeBytes { Data($0) }.base64EncodedString() + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: folder.file("store.key")))
        chmod(folder.file("store.key"), 0o600)
    }
}
