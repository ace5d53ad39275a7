import Foundation
import Latchkey
import Testing

/// RFC 9728's rules as values: where a resource's metadata is, when a document may be used, and
/// what a challenge asks for. No I/O.
@Suite("Protected resource metadata (RFC 9728)")
struct ProtectedResourceMetadataTests {
    func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    @Test(
        "the well-known URL: inserted between the host and the path, a lone slash dropped, port and query kept",
        arguments: [
            ("https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
            ("https://api.example.com/", "https://api.example.com/.well-known/oauth-protected-resource"),
            ("https://api.example.com", "https://api.example.com/.well-known/oauth-protected-resource"),
            (
                "https://api.example.com:8443/v1/tools?tenant=a",
                "https://api.example.com:8443/.well-known/oauth-protected-resource/v1/tools?tenant=a"
            ),
            ("http://127.0.0.1:9000/mcp/", "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp/"),
        ])
    func wellKnown(_ resource: String, _ expected: String) throws {
        #expect(try ProtectedResourceMetadata.wellKnownURL(for: try url(resource)).absoluteString == expected)
    }

    @Test(
        "a resource with a fragment, over plain http to another host, or not a URL a request can go to is refused",
        arguments: ["https://api.example.com/mcp#top", "http://api.example.com/mcp", "mcp", "//api.example.com/x"])
    func refusedResources(_ resource: String) throws {
        let error = #expect(throws: ResourceDiscoveryError.self) {
            _ = try ProtectedResourceMetadata.wellKnownURL(for: try url(resource))
        }
        #expect(error?.code == .invalidResource)
    }

    @Test("a document for the resource is read; unknown members and wrongly typed optional ones are ignored")
    func reads() throws {
        let json = Data(
            """
            {"resource": "https://MCP.Example.com/mcp", "authorization_servers": ["https://auth.example.com",
             "http://evil.example.com", "http://127.0.0.1:9000", 42], "scopes_supported": ["files:read", 7],
             "bearer_methods_supported": "header", "resource_name": "Files", "dpop_bound_access_tokens_required": true,
             "x-extension": {"a": 1}}
            """.utf8)
        let metadata = try ProtectedResourceMetadata(json: json, fetchedFor: try url("https://mcp.example.com/mcp"))
        #expect(metadata.resource.absoluteString == "https://mcp.example.com/mcp")
        #expect(
            metadata.authorizationServers.map(\.absoluteString) == [
                "https://auth.example.com", "http://127.0.0.1:9000",
            ])
        #expect(metadata.scopesSupported == ["files:read"])
        #expect(metadata.bearerMethodsSupported == [])
        #expect(metadata.resourceName == "Files")
        #expect(metadata.dpopBoundAccessTokensRequired)
    }

    @Test(
        "a document for another resource, with no usable authorization server, or not JSON is refused with its code",
        arguments: [
            (
                #"{"resource": "https://mcp.example.com/other", "authorization_servers": ["https://a.example"]}"#,
                "resourceMismatch"
            ),
            (
                #"{"resource": "https://mcp.example.com/mcp/", "authorization_servers": ["https://a.example"]}"#,
                "resourceMismatch"
            ),
            (
                #"{"resource": "https://mcp.example.com/mcp", "authorization_servers": ["http://a.example"]}"#,
                "noAuthorizationServer"
            ),
            (#"{"resource": "https://mcp.example.com/mcp"}"#, "noAuthorizationServer"),
            (#"{"authorization_servers": ["https://a.example"]}"#, "invalidMetadata"),
            (#"["https://mcp.example.com/mcp"]"#, "invalidMetadata"),
            ("<html>", "invalidMetadata"),
        ])
    func refusedDocuments(_ json: String, _ code: String) throws {
        let error = #expect(throws: ResourceDiscoveryError.self) {
            _ = try ProtectedResourceMetadata(json: Data(json.utf8), fetchedFor: try url("https://mcp.example.com/mcp"))
        }
        #expect(error?.code.description == code)
    }

    @Test("a challenge's metadata URL, scopes and error; a challenge of another scheme is none")
    func challenges() throws {
        let challenge = try #require(
            ResourceChallenge(wwwAuthenticate: [
                #"Basic realm="x", Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope""#
            ]))
        #expect(challenge.scheme == "bearer")
        #expect(
            challenge.resourceMetadata?.absoluteString
                == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        #expect(challenge.scopes == ["files:read", "files:write"])
        #expect(challenge.isInsufficientScope)
        #expect(ResourceChallenge(wwwAuthenticate: [#"DPoP algs="ES256""#])?.scheme == "dpop")
        #expect(ResourceChallenge(wwwAuthenticate: [#"Basic realm="x""#]) == nil)
        #expect(ResourceChallenge(wwwAuthenticate: []) == nil)
    }
}
