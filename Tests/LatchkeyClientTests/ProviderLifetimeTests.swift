import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A provider and a store are released when their last user lets them go, whatever they did.
@Suite("Provider lifetime")
struct ProviderLifetimeTests {
    @Test(
        "a provider that verified ID tokens (its key set fetched and kept), refreshed and signed out is released with its store"
    )
    func releasedAfterVerifying() async throws {
        let dev = try await DevProvider.start(
            configuration: .default, signingKeys: SharedSigningKeys.get(), now: SystemClock().dateSource)
        weak var releasedProvider: OpenIDProvider?
        weak var releasedStore: CredentialStore?
        do {
            let store = CredentialStore.inMemory()
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", scopes: ["openid", "offline_access"],
                    allowsPasswordGrant: true),
                transport: transport)
            let credential = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: store)
            // The ID token was verified against the provider's key set.
            #expect(try await credential.token.idToken != nil)
            _ = try await credential.refresh()
            _ = try await credential.userInfo()
            let result = await store.signOut(.account(credential.id), options: .local)
            #expect(result.signedOutLocally)
            releasedProvider = provider
            releasedStore = store
        }
        await dev.stop()
        #expect(releasedProvider == nil, "the provider outlived its last user")
        #expect(releasedStore == nil, "the store outlived its last user")
    }
}
