import Foundation
import Latchkey

/// What the proxy reads of a JSON-RPC message: only what the transport needs (whether it is a
/// request, and its id; whether it answers one; the protocol version `initialize` agreed on;
/// whether the client shows URLs, and its answer to the proxy's own request to show one).
/// Nothing else of a message is looked at, and nothing of it is logged.
struct JSONRPCPeek: Sendable, Hashable {
    /// The message's id: a request's or a response's; `nil` for a notification.
    var id: JSONValue?
    /// The request's or notification's method; `nil` for a response.
    var method: String?
    /// The protocol version of a response to `initialize` (its `result.protocolVersion`).
    var protocolVersion: String?
    /// Whether an `initialize` request says the client shows URLs it is asked to
    /// (`params.capabilities.elicitation.url`, MCP 2025-11-25).
    var offersURLElicitation = false
    /// The `action` of a response to an elicitation (`result.action`: `accept`, `decline`,
    /// `cancel`).
    var action: String?

    /// Whether the message is a request, which waits for an answer.
    var isRequest: Bool { id != nil && method != nil }
    /// Whether the message answers a request.
    var isResponse: Bool { id != nil && method == nil }

    /// Reads `message`; one that is not a JSON object (a batch, or not JSON) is peeked as a
    /// notification: forwarded, never waited for.
    init(_ message: Data) {
        // Only these fields are decoded: a tool's result, however large, is never built into
        // values, on a path every message of both sides takes.
        guard let fields = try? JSONDecoder().decode(Fields.self, from: message) else { return }
        (id, method, protocolVersion) = (fields.id, fields.method, fields.result?.protocolVersion)
        action = fields.result?.action
        offersURLElicitation = method == "initialize" && fields.params?.capabilities?.elicitation?.url != nil
    }

    /// The fields the transport reads; any other is skipped.
    private struct Fields: Decodable {
        struct Result: Decodable {
            var protocolVersion: String?
            var action: String?
        }
        struct Params: Decodable {
            struct Capabilities: Decodable {
                struct Elicitation: Decodable {
                    var url: JSONValue?
                }
                var elicitation: Elicitation?
            }
            var capabilities: Capabilities?
        }
        var id: JSONValue?
        var method: String?
        var result: Result?
        var params: Params?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(JSONValue.self, forKey: .id).flatMap { $0 == .null ? nil : $0 }
            method = try? container.decodeIfPresent(String.self, forKey: .method)
            result = try? container.decodeIfPresent(Result.self, forKey: .result)
            // Only an `initialize` request's capabilities are read: no other message's
            // parameters (a tool's arguments) are decoded.
            if method == "initialize" { params = try? container.decodeIfPresent(Params.self, forKey: .params) }
        }

        enum CodingKeys: String, CodingKey { case id, method, result, params }
    }

    /// The JSON-RPC error answering the request `id`, with `message` (JSON-RPC 2.0 §5.1:
    /// -32603, an internal error of the server the client talks to, which is this proxy), and
    /// in its `data` the argument vector of the command that mends it, when there is one: a
    /// program reads the words as words, whatever a server put in them.
    static func error(answering id: JSONValue, message: String, command: [String]? = nil) -> Data {
        var error: [String: JSONValue] = ["code": .number(-32_603), "message": .string(message)]
        if let command { error["data"] = .object(["command": .array(command.map(JSONValue.string))]) }
        let answer: JSONValue = .object(["jsonrpc": .string("2.0"), "id": id, "error": .object(error)])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return (try? encoder.encode(answer)) ?? Data()
    }
}
