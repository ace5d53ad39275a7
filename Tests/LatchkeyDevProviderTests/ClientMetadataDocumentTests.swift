import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A client whose id is the URL of its metadata document: the provider fetches the document and
/// takes only one that describes a public client under that very URL.
@Suite("Dev provider: client ID metadata documents")
struct ClientMetadataDocumentTests {
    @Test("the metadata says the provider fetches them")
    func advertised() async throws {
        try await withProvider { client in
            let metadata = try await client.get(client.url(.discovery)).json
            #expect(metadata["client_id_metadata_document_supported"] as? Bool == true)
        }
    }

    @Test("a document that is not the client's (its client_id is not its URL) is refused at both endpoints")
    func notTheClientsDocument() async throws {
        try await withProvider { client in
            // Another provider's discovery document: JSON at a loopback URL, with no client_id.
            let other = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
            let id = other.url(.discovery).absoluteString
            let token = try await client.post(
                .token,
                [
                    ("grant_type", "password"), ("client_id", id), ("username", "alice"),
                    ("password", "alice-password"),
                ])
            #expect(token.status == 401)
            #expect(token["error"] == "invalid_client")
            #expect(token["error_description"]?.contains("client_id is not its URL") == true)
            var query = URLComponents(string: client.url(.authorization))
            query?.queryItems = [
                .init(name: "client_id", value: id), .init(name: "redirect_uri", value: "http://127.0.0.1/callback"),
                .init(name: "response_type", value: "code"),
            ]
            let page = try await client.get(try #require(query?.string))
            #expect(page.status == 400)
            #expect(page.text.contains("Unknown client"))
            await other.stop()
        }
    }

    @Test("a URL id that names no document (unreachable, or plain http off loopback) is an unknown client")
    func noDocument() async throws {
        try await withProvider { client in
            for id in ["http://127.0.0.1:9/client.json", "http://tool.example/client.json"] {
                let token = try await client.post(
                    .token, [("grant_type", "password"), ("client_id", id), ("username", "alice"), ("password", "x")])
                #expect(token.status == 401, "\(id)")
                #expect(token["error"] == "invalid_client", "\(id)")
            }
        }
    }
}
