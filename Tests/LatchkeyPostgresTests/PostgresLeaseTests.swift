import Crypto
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// The PostgreSQL lease against a real server: a holder holds no connection while it works, so
/// many holders share a small pool.
@Suite("PostgreSQL lease", .enabled(if: PostgresServer.isEnabled))
struct PostgresLeaseTests {
    @Test(
        "50 distinct credentials refresh at once through a pool of 4 connections: every one refreshes once",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func manyHoldersSmallPool() async throws {
        let url = try await PostgresServer.freshDatabase()
        var configuration = try PostgresCredentialStorage.clientConfiguration(url: url)
        configuration.options.maximumConnections = 4
        configuration.options.minimumConnections = 0
        let client = PostgresClient(configuration: configuration)
        let clock = TestClock()
        // Fifty users: the same user signing in again replaces the tokens of their account.
        var users = DevProviderConfiguration.default
        users.users = (0..<50).map {
            DevProviderConfiguration.User(
                username: "user\($0)", password: "pw\($0)", name: "User \($0)", email: "user\($0)@example.com")
        }
        let dev = try await DevProvider.start(
            configuration: users, signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        let transport = AsyncHTTPClientTransport()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let storage = try await PostgresCredentialStorage.open(
                client: client, key: SymmetricKey(size: .bits256), timeout: PostgresServer.openTimeout)
            let store = CredentialStore(storage: storage, logger: TraceLog.logger("store"), clock: clock)
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
                transport: transport, logger: TraceLog.logger("provider"), clock: clock)
            var credentials: [Credential] = []
            for user in 0..<50 {
                credentials.append(
                    try await provider.signIn(.password(username: "user\(user)", password: "pw\(user)"), into: store))
            }
            clock.advance(3_600)
            dev.faults.resetCounters()
            let fresh = credentials
            let tokens = try await withThrowingTaskGroup(of: String.self) { refreshes in
                for credential in fresh { refreshes.addTask { try await credential.accessToken() } }
                var tokens: [String] = []
                for try await token in refreshes { tokens.append(token) }
                return tokens
            }
            #expect(Set(tokens).count == 50)
            #expect(dev.faults.count("token.refresh_token") == 50)
        }
        try await transport.shutdown()
        await dev.stop()
    }
}
