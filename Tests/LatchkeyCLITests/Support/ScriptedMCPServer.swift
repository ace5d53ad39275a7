import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// An MCP endpoint on loopback that plays, on cue, what the Python SDK's server does only now
/// and then: an answer's event stream that ends before the answer (to be resumed with
/// `Last-Event-ID`), a message sent unasked on its own stream, and a session it ends. It speaks
/// Streamable HTTP as the specification says and records every request's method and headers.
final class ScriptedMCPServer: Sendable {
    /// One request as the server saw it.
    struct Seen: Sendable {
        var method: String
        var rpcMethod: String?
        var headers: HTTPFields
    }

    static let sessionID = "scripted-session-1"
    static let protocolVersion = "2025-11-25"

    private let server: LoopbackServer
    let seen = NIOLockedValueBox<[Seen]>([])
    /// Whether the server has forgotten the session (requests carrying it then get 404).
    let sessionEnded = NIOLockedValueBox(false)
    private let listened = NIOLockedValueBox(false)
    private let cutAnswers = NIOLockedValueBox<[String: String]>([:])
    /// The authorization servers its protected resource metadata names (RFC 9728); none
    /// published when empty.
    let authorizationServers: [String]

    var endpoint: URL { URL(string: "http://127.0.0.1:\(server.port)/mcp") ?? URL(fileURLWithPath: "/") }

    private init(server: LoopbackServer, authorizationServers: [String]) {
        self.server = server
        self.authorizationServers = authorizationServers
    }

    /// Starts the server, its metadata naming `authorizationServers`.
    static func start(authorizationServers: [String]) async throws -> ScriptedMCPServer {
        let box = NIOLockedValueBox<ScriptedMCPServer?>(nil)
        let server = try await LoopbackServer.start(
            CallbackResponder<BasicRequestContext> { request, _ in
                let body = try await request.body.collect(upTo: 1 << 20)
                guard let scripted = box.withLockedValue({ $0 }) else { return Response(status: .serviceUnavailable) }
                return scripted.answer(request, body: Data(body.readableBytesView))
            })
        let scripted = ScriptedMCPServer(server: server, authorizationServers: authorizationServers)
        box.withLockedValue { $0 = scripted }
        return scripted
    }

    func stop() async { await server.stop() }

    private func answer(_ request: Request, body: Data) -> Response {
        if request.uri.path == "/.well-known/oauth-protected-resource/mcp" {
            guard !authorizationServers.isEmpty else { return Response(status: .notFound) }
            let document = try? JSONSerialization.data(withJSONObject: [
                "resource": endpoint.absoluteString, "authorization_servers": authorizationServers,
            ])
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: document ?? Data())))
        }
        let message = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        let rpcMethod = message?["method"] as? String
        seen.withLockedValue {
            $0.append(Seen(method: request.method.rawValue, rpcMethod: rpcMethod, headers: request.headers))
        }
        guard request.headers[.authorization]?.hasPrefix("Bearer ey") == true else {
            return Response(status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
        }
        let session = request.headers[Self.session]
        if session != nil, session != Self.sessionID || sessionEnded.withLockedValue({ $0 }) {
            return Response(status: .notFound)
        }
        switch request.method {
        case .delete:
            sessionEnded.withLockedValue { $0 = true }
            return Response(status: .ok)
        case .get:
            if let position = request.headers[Self.lastEventID] {
                // Resumption: the answer the cut stream did not carry.
                guard let answer = cutAnswers.withLockedValue({ $0.removeValue(forKey: position) }) else {
                    return Response(status: .notFound)
                }
                return Self.stream(["id: \(position)-answer\ndata: \(answer)\n\n"])
            }
            // The server's own stream: one message sent unasked, once; a second GET is refused
            // as a server without such a stream refuses it.
            let first = listened.withLockedValue { heard in
                defer { heard = true }
                return !heard
            }
            guard first else {
                return Response(status: .methodNotAllowed)
            }
            return Self.stream([
                #"data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"unasked"}}"# + "\n\n"
            ])
        default:
            break
        }
        let id =
            message?["id"].flatMap { try? JSONSerialization.data(withJSONObject: $0, options: .fragmentsAllowed) }
            .map { String(decoding: $0, as: UTF8.self) } ?? "null"
        switch rpcMethod {
        case "initialize":
            var response = Self.stream([
                "id: init-0\ndata:\n\n",
                #"id: init-1"# + "\n"
                    + #"data: {"jsonrpc":"2.0","id":\#(id),"result":{"protocolVersion":"\#(Self.protocolVersion)","capabilities":{},"serverInfo":{"name":"scripted","version":"1"}}}"#
                    + "\n\n",
            ])
            response.headers[Self.session] = Self.sessionID
            return response
        case "tools/call":
            // The stream is primed, then ends before the answer, which waits for a GET.
            cutAnswers.withLockedValue {
                $0["call-\(id)"] = #"{"jsonrpc":"2.0","id":\#(id),"result":{"content":[],"resumed":true}}"#
            }
            return Self.stream(["id: call-\(id)\ndata:\n\n"])
        case "ping":
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"jsonrpc":"2.0","id":\#(id),"result":{}}"#)))
        default:
            return Response(status: .accepted)
        }
    }

    private static func stream(_ events: [String]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/event-stream"],
            body: .init(byteBuffer: ByteBuffer(string: events.joined())))
    }

    static let session = HTTPField.Name("Mcp-Session-Id") ?? .contentLocation
    static let version = HTTPField.Name("MCP-Protocol-Version") ?? .contentLocation
    static let lastEventID = HTTPField.Name("Last-Event-ID") ?? .contentLocation
}
