import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing

/// Resource-first discovery against the development provider's protected resources (on
/// loopback, port 0): from a resource URL alone to a token the resource takes.
@Suite("Resource-first discovery (RFC 9728) against the development provider")
struct ResourceDiscoveryTests {
    static func withProvider(_ body: (DevProvider) async throws -> Void) async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [
            .init(path: "/resource"), .init(path: "/files", scopes: ["files:read"]),
        ]
        configuration.clients[0].scopes += ["files:read"]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        do {
            try await body(dev)
        } catch {
            await dev.stop()
            throw error
        }
        await dev.stop()
    }

    static let discovery = ResourceDiscovery(transport: AsyncHTTPClientTransport.shared)

    /// GET `url` with `token`, as a resource's client would.
    static func call(_ url: URL, token: String?) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: .get, url: url)
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        let answer = try await AsyncHTTPClientTransport.shared.send(request, body: nil, options: HTTPTransportOptions())
        return (answer.response, answer.body)
    }

    @Test(
        "from the resource's URL alone: its metadata, its authorization server, a sign-in for it, and a call it takes")
    func wholeChain() async throws {
        try await Self.withProvider { dev in
            let resource = dev.issuer.appendingPathComponent("resource")
            let found = try await Self.discovery.discover(resource)
            #expect(found.metadata.resource == resource)
            #expect(found.authorizationServer == dev.issuer)
            #expect(
                found.challenge?.resourceMetadata
                    == dev.issuer.appendingPathComponent(".well-known/oauth-protected-resource/resource"))
            // The authorization server is an ordinary provider from there on.
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: try #require(found.authorizationServer), clientID: "latchkey-cli", allowsPasswordGrant: true
                ),
                transport: AsyncHTTPClientTransport.shared)
            let token = try await provider.token(
                for: .password(username: "alice", password: "alice-password"), resources: [resource])
            let (answer, body) = try await Self.call(resource, token: token.accessToken)
            #expect(answer.status == .ok)
            #expect(String(decoding: body, as: UTF8.self).contains(#""username":"alice""#))
        }
    }

    @Test("a token without the scope the resource needs: insufficient_scope names it; a token with it is taken")
    func insufficientScope() async throws {
        try await Self.withProvider { dev in
            let files = dev.issuer.appendingPathComponent("files")
            let found = try await Self.discovery.discover(files)
            #expect(found.scopes == ["files:read"], "the challenge's scopes")
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
                transport: AsyncHTTPClientTransport.shared)
            let narrow = try await provider.token(
                for: .password(username: "alice", password: "alice-password"), scopes: ["openid"])
            let (refused, _) = try await Self.call(files, token: narrow.accessToken)
            #expect(refused.status == .forbidden)
            let challenge = try #require(
                ResourceChallenge(wwwAuthenticate: refused.headerFields[values: .wwwAuthenticate]))
            #expect(challenge.isInsufficientScope)
            #expect(challenge.scopes == ["files:read"])
            let wide = try await provider.token(
                for: .password(username: "alice", password: "alice-password"), scopes: ["openid"] + challenge.scopes)
            #expect(try await Self.call(files, token: wide.accessToken).0.status == .ok)
        }
    }

    @Test(
        "the metadata is kept as providers' documents are: fetched once for every discovery sharing the storage, asked again (304) once expired; without a storage, every time"
    )
    func keptMetadata() async throws {
        try await Self.withProvider { dev in
            let resource = dev.issuer.appendingPathComponent("resource")
            let clock = TestClock()
            let documents = try #require(InMemoryCredentialStorage().capabilities.providerDocuments)
            // Two processes sharing one store.
            let first = ResourceDiscovery(
                transport: AsyncHTTPClientTransport.shared, documents: documents, clock: clock)
            let second = ResourceDiscovery(
                transport: AsyncHTTPClientTransport.shared, documents: documents, clock: clock)
            dev.faults.resetCounters()
            let found = try await first.discover(resource)
            #expect(try await second.discover(resource) == found)
            #expect(dev.faults.count("resource_metadata") == 1, "one fetch while it is fresh")

            clock.advance(by: .seconds(200))  // past its 60 s and the 60 s it may be used stale
            #expect(try await second.discover(resource) == found)
            #expect(dev.faults.count("resource_metadata") == 2, "asked again")
            #expect(try await first.discover(resource) == found)
            #expect(dev.faults.count("resource_metadata") == 2, "kept for another lifetime")

            _ = try await Self.discovery.discover(resource)
            _ = try await Self.discovery.discover(resource)
            #expect(dev.faults.count("resource_metadata") == 4, "nothing kept without a storage")
        }
    }

    @Test("a URL that asks for no token, and one with no metadata, are each a typed error naming it")
    func refusals() async throws {
        try await Self.withProvider { dev in
            let open = dev.issuer.appendingPathComponent(".well-known/openid-configuration")
            let notProtected = await #expect(throws: ResourceDiscoveryError.self) {
                _ = try await Self.discovery.discover(open)
            }
            #expect(notProtected?.code == .notProtected)
            #expect(notProtected?.url == open)
            // The userinfo endpoint asks for a token but publishes no resource metadata.
            let userinfo = dev.issuer.appendingPathComponent("userinfo")
            let noMetadata = await #expect(throws: ResourceDiscoveryError.self) {
                _ = try await Self.discovery.discover(userinfo)
            }
            #expect(noMetadata?.code == .noMetadata)
            #expect(noMetadata?.status == 404)
        }
    }
}
