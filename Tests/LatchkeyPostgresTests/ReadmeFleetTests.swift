import Crypto
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// The README's fleet example, run as written (the README test in LatchkeyClientTests checks
/// that every line of it is here).
@Suite("README: running Latchkey in a fleet", .enabled(if: PostgresServer.isEnabled))
struct ReadmeFleetTests {
    @Test("a fleet instance: open the store, get a token, see changes, drain the outbox")
    func fleet() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let url = try await PostgresServer.freshDatabase()
        let keyFromSecretManager = SymmetricKey(size: .bits256)
        let provider = OpenIDProvider(
            configuration: .init(issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: AsyncHTTPClientTransport.shared)

        let client = PostgresClient(
            configuration: try PostgresCredentialStorage.clientConfiguration(
                url: url))
        let running = Task { await client.run() }
        let storage = try await PostgresCredentialStorage.open(client: client, key: keyFromSecretManager)
        let store = CredentialStore(storage: storage)
        await store.register(provider)
        let id = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store).id
        let token = try await store.credential(id, provider: provider).accessToken()
        let changes = store.changes
        let drainer = OutboxDrainer(store: store, every: .seconds(30))

        #expect(await dev.isActive(token))
        _ = (changes, drainer)
        running.cancel()
        await dev.stop()
    }
}
