import Foundation
import Latchkey
import Testing

/// Whether a resource may be sent an issuer's tokens, decided without I/O.
@Suite("ResourceTrust")
struct ResourceTrustTests {
    let issuer = "https://login.example.com/tenant"

    func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    func metadata(_ resource: String, servers: [String]) throws -> ProtectedResourceMetadata {
        let json = try JSONSerialization.data(withJSONObject: [
            "resource": resource, "authorization_servers": servers,
        ])
        return try ProtectedResourceMetadata(json: json, fetchedFor: try url(resource))
    }

    @Test("metadata naming the issuer trusts it; naming others, or none, does not")
    func metadataDecides() throws {
        let resource = try url("https://mcp.example.net/mcp")
        let named = try metadata(resource.absoluteString, servers: [issuer + "/"])
        #expect(ResourceTrust.decide(resource: resource, issuer: issuer, metadata: named) == .namedByMetadata)
        let other = try metadata(resource.absoluteString, servers: ["https://attacker.example"])
        #expect(
            ResourceTrust.decide(resource: resource, issuer: issuer, metadata: other)
                == .untrusted(authorizationServers: [try url("https://attacker.example")]))
        #expect(
            ResourceTrust.decide(resource: resource, issuer: issuer, metadata: nil)
                == .untrusted(authorizationServers: []))
        #expect(ResourceTrust.decide(resource: resource, issuer: issuer, paired: []) == nil, "only metadata can tell")
    }

    @Test(
        "a pairing covers itself and the paths beneath it, on its own origin only",
        arguments: [
            ("https://api.example.net/", "https://api.example.net/v1/me", true),
            ("https://api.example.net/v1", "https://api.example.net/v1/me", true),
            ("https://api.example.net/v1", "https://api.example.net/v1", true),
            ("https://API.example.net/v1/", "https://api.example.net/v1", true),
            ("https://api.example.net/v1", "https://api.example.net/v12", false),
            ("https://api.example.net/v1", "https://api.example.net/", false),
            ("https://api.example.net/", "http://api.example.net/", false),
            ("https://api.example.net/", "https://api.example.net:8443/", false),
            ("https://api.example.net/", "https://api.example.net.attacker.example/", false),
            ("https://api.example.net/?tenant=a", "https://api.example.net/x", false),
        ])
    func pairings(pairing: String, resource: String, covered: Bool) throws {
        let decided = ResourceTrust.decide(resource: try url(resource), issuer: issuer, paired: [try url(pairing)])
        #expect((decided == .paired) == covered)
    }

    @Test("the issuer's own origin is trusted; another port or host is not")
    func issuersOrigin() throws {
        #expect(
            ResourceTrust.decide(resource: try url("https://login.example.com/userinfo"), issuer: issuer, paired: [])
                == .issuersOwn)
        #expect(
            ResourceTrust.decide(resource: try url("https://login.example.com:443/x"), issuer: issuer, paired: [])
                == .issuersOwn)
        #expect(
            ResourceTrust.decide(resource: try url("https://login.example.com:8443/"), issuer: issuer, paired: [])
                == nil)
        #expect(ResourceTrust.decide(resource: try url("http://login.example.com/"), issuer: issuer, paired: []) == nil)
        #expect(ResourceTrust.decide(resource: try url("https://example.com/"), issuer: issuer, paired: []) == nil)
    }
}
