import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import Latchkey
import LatchkeyHTTP
import LatchkeyTestSupport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import ServiceLifecycle

/// A stand-in Kubernetes API server on loopback that authenticates as Kubernetes' OIDC
/// authenticator does: the bearer token must be an ID token of the issuer, for the client,
/// with a valid signature from the issuer's JWKS and not expired. It serves `/version`, over
/// TLS with a certificate of its own (`certificatePath`), as client-go sends exec credentials
/// only over TLS.
final class KubeAPIServer: Sendable {
    private let server: LoopbackServer
    private let tokens: Tokens
    var port: Int { server.port }

    /// The bearer tokens it accepted, and how many requests it refused.
    final class Tokens: Sendable {
        let state = NIOLockedValueBox<(accepted: Set<String>, refused: Int)>(([], 0))
    }

    var url: String { "https://127.0.0.1:\(port)" }
    /// The server's self-signed certificate, for the kubeconfig's `certificate-authority`.
    let certificatePath: String
    var accepted: Set<String> { tokens.state.withLockedValue { $0.accepted } }
    var refused: Int { tokens.state.withLockedValue { $0.refused } }

    private init(server: LoopbackServer, certificatePath: String, tokens: Tokens) {
        self.server = server
        self.certificatePath = certificatePath
        self.tokens = tokens
    }

    static func start(issuer: URL, clientID: String, folder: TemporaryFolder) async throws -> KubeAPIServer {
        let certificate = try await LoopbackCertificate.make(in: folder, named: "api")
        let tls = try certificate.serverConfiguration()
        let verifier = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: clientID),
            transport: AsyncHTTPClientTransport.shared)
        let tokens = Tokens()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            let header = request.headers[.authorization] ?? ""
            let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
            do {
                _ = try await verifier.verifyIDToken(token)
            } catch {
                tokens.state.withLockedValue { $0.refused += 1 }
                return Response(
                    status: .unauthorized, headers: [.contentType: "application/json"],
                    body: ResponseBody(
                        byteBuffer: ByteBuffer(
                            string:
                                #"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
                        )))
            }
            tokens.state.withLockedValue { _ = $0.accepted.insert(token) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(
                    byteBuffer: ByteBuffer(
                        string:
                            #"{"major":"1","minor":"31","gitVersion":"v1.31.0-latchkey-stand-in","platform":"linux/amd64"}"#
                    )))
        }
        let server = try await LoopbackServer.start(responder, server: try .tls(tlsConfiguration: tls))
        return KubeAPIServer(server: server, certificatePath: certificate.certificatePath, tokens: tokens)
    }

    func stop() async { await server.stop() }
}

/// A test's own failure, with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
