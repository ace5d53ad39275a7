import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing

/// `OpenIDProvider.register`: RFC 7591 dynamic client registration against the development
/// provider's own implementation.
@Suite("Client registration")
struct ClientRegistrationTests {
    @Test("a registered confidential client signs in; its secret stays out of descriptions and dumps")
    func confidential() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let transport = AsyncHTTPClientTransport.shared
        let client = try await OpenIDProvider.register(
            ClientRegistrationRequest(
                clientName: "tests", redirectURIs: [try #require(URL(string: "http://127.0.0.1/callback"))],
                grantTypes: ["password", "refresh_token"], authenticationMethod: "client_secret_post"),
            issuer: dev.issuer, transport: transport)
        let secret = try #require(client.clientSecret)
        #expect(client.authenticationMethod == "client_secret_post")
        #expect(client.authentication == .post(secret: secret))
        var dumped = ""
        dump(client, to: &dumped)
        for text in [client.description, String(reflecting: client), dumped] { #expect(!text.contains(secret)) }
        #expect(client.fields["client_secret"] == nil)

        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: client.clientID, authentication: client.authentication,
                allowsPasswordGrant: true),
            transport: transport)
        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: CredentialStore.inMemory())
        #expect(try await credential.accessToken().isEmpty == false)
    }

    @Test(
        "metadata the provider will not take is refused with its RFC 7591 error; no registration is a missing endpoint")
    func refusals() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let transport = AsyncHTTPClientTransport.shared
        let offLoopback = ClientRegistrationRequest(redirectURIs: [try #require(URL(string: "http://app.example/cb"))])
        let redirect = await #expect(throws: ProviderError.self) {
            try await OpenIDProvider.register(offLoopback, issuer: dev.issuer, transport: transport)
        }
        #expect(redirect?.oauthError == "invalid_redirect_uri")
        #expect(redirect?.endpoint == .registration)
        let scope = ClientRegistrationRequest(
            redirectURIs: [try #require(URL(string: "http://127.0.0.1/callback"))], scopes: ["openid", "admin"])
        let metadata = await #expect(throws: ProviderError.self) {
            try await OpenIDProvider.register(scope, issuer: dev.issuer, transport: transport)
        }
        #expect(metadata?.oauthError == "invalid_client_metadata")

        var closed = DevProviderConfiguration.default
        closed.clientRegistration = false
        let shut = try await DevProvider.start(configuration: closed, signingKeys: SharedSigningKeys.get())
        defer { Task { await shut.stop() } }
        let missing = await #expect(throws: ProviderError.self) {
            try await OpenIDProvider.register(
                ClientRegistrationRequest(redirectURIs: [try #require(URL(string: "http://127.0.0.1/callback"))]),
                issuer: shut.issuer, transport: transport)
        }
        #expect(missing?.code == .missingEndpoint)
    }
}
