import Foundation
import Hummingbird
import HummingbirdTLS
import NIOConcurrencyHelpers
import NIOCore

/// A client's metadata document (draft-ietf-oauth-client-id-metadata-document), published at
/// the URL that is its client id: over plain http for the development provider, which fetches
/// loopback ones, or over TLS with a loopback certificate for a provider that fetches only https.
struct ClientDocumentPublisher {
    private let server: LoopbackServer
    private let fetches: NIOLockedValueBox<Int>
    /// The document's URL, which is the client id.
    let clientID: String
    /// `127.0.0.1:PORT`, as a provider's allowlist names it.
    var host: String { "127.0.0.1:\(server.port)" }
    /// How often the document was fetched.
    var fetched: Int { fetches.withLockedValue { $0 } }

    /// Publishes a public client's document that lists `grantTypes` and the loopback redirect.
    static func start(grantTypes: [String], certificate: LoopbackCertificate? = nil) async throws
        -> ClientDocumentPublisher
    {
        let documentURL = NIOLockedValueBox("")
        let fetches = NIOLockedValueBox(0)
        let responder = CallbackResponder<BasicRequestContext> { _, _ in
            fetches.withLockedValue { $0 += 1 }
            let document: [String: Any] = [
                "client_id": documentURL.withLockedValue { $0 }, "client_name": "latchkey test",
                "redirect_uris": ["http://127.0.0.1/callback"], "grant_types": grantTypes,
                "token_endpoint_auth_method": "none", "scope": "openid offline_access",
            ]
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: document))))
        }
        let server =
            if let certificate {
                try await LoopbackServer.start(
                    responder, server: .tls(tlsConfiguration: try certificate.serverConfiguration()))
            } else {
                try await LoopbackServer.start(responder)
            }
        let clientID = "\(certificate == nil ? "http" : "https")://127.0.0.1:\(server.port)/client.json"
        documentURL.withLockedValue { $0 = clientID }
        return ClientDocumentPublisher(server: server, fetches: fetches, clientID: clientID)
    }

    func stop() async { await server.stop() }
}
