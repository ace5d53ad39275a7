import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import Testing

/// The README's client example, kept compiling and working (against the development provider,
/// with the test playing the browser).
@Suite("README client example")
struct ReadmeClientExampleTests {
    @Test("sign in, get an access token, revoke everything")
    func example() async throws {
        let dev = try await DevProvider.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }

        let store = try await CredentialStore.sqlite(at: folder.appendingPathComponent("credentials.sqlite").path)
        let provider = try await OpenIDProvider.discover(
            OpenIDProviderConfiguration(issuer: dev.issuer, clientID: "latchkey-cli"),
            transport: AsyncHTTPClientTransport.shared)
        let harness = Harness(
            kind: .dev, provider: provider, store: store, dev: dev, glewlwyd: nil, inspector: provider)
        let credential = try await provider.signIn(
            .browser(listener: NIOLoopbackRedirectListener()) { url in
                Task { try await Browser.signIn(at: url, harness: harness) }
            }, into: store)
        let accessToken = try await credential.accessToken()
        let result = await credential.revoke(.all)

        #expect(!accessToken.isEmpty)
        #expect(result.succeeded)
        #expect(try await store.all().isEmpty)
        await dev.stop()
    }
}
