import Foundation
import HTTPTypes
import Latchkey

/// What an HTTP answer to a forwarded message means for the client (MCP Streamable HTTP,
/// "Sending messages to the server"): a pure decision, tested without I/O.
enum AnswerOutcome: Sendable, Equatable {
    /// Taken, nothing to deliver (202 to a notification or a response).
    case accepted
    /// A JSON body to deliver as it is: one message, or a batch.
    case message(Data)
    /// An event stream, whose messages were delivered as they arrived.
    case streamed
    /// Not delivered.
    case failed(MCPProxyFailure.Code, status: HTTPResponse.Status, scope: String?, description: String?)

    /// The outcome of `answer`, which `Credential.send` returns after its one refresh and retry.
    static func of(_ answer: HTTPTransportResponse, sentSession: Bool) -> AnswerOutcome {
        let status = answer.response.status
        switch status.code {
        case 200..<300:
            let type = answer.response.headerFields[.contentType]?.lowercased() ?? ""
            if type.hasPrefix("text/event-stream") { return .streamed }
            let blank = answer.body.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) }
            return blank ? .accepted : .message(answer.body)
        case 401, 403:
            // RFC 6750 §3.1 answers a missing scope with 403; some servers use 401 for it.
            let challenges = AuthenticationChallenge.parse(answer.response.headerFields[values: .wwwAuthenticate])
            if let challenge = challenges.first(where: { $0.error == .insufficientScope }) {
                return .failed(
                    .insufficientScope, status: status, scope: challenge.parameters["scope"],
                    description: challenge.parameters["error_description"])
            }
            return .failed(
                status.code == 401 ? .tokenRefused : .refused, status: status, scope: nil,
                description: said(answer.body))
        case 404 where sentSession:
            return .failed(.sessionEnded, status: status, scope: nil, description: said(answer.body))
        default:
            return .failed(.refused, status: status, scope: nil, description: said(answer.body))
        }
    }

    /// What an error body says, when it says it as JSON-RPC (`error.message`) or OAuth
    /// (`error_description`) do: at most 200 characters of it.
    static func said(_ body: Data) -> String? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: body) else { return nil }
        var text = object["error_description"]?.stringValue
        if case .object(let error)? = object["error"] { text = error["message"]?.stringValue ?? text }
        return text.map { String($0.prefix(200)) }
    }
}
