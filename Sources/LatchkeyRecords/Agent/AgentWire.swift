#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// How agent requests and answers travel on the socket: one JSON object per line, dates as
/// seconds since 1970. The one definition both sides use — the agent and its NIO client, and
/// the quick path's few system calls.
package enum AgentWire {
    /// `value` as one line, its newline included.
    package static func line<Value: Encodable>(_ value: Value) -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        var data = (try? encoder.encode(value)) ?? Data(#"{"failure":"failed","message":"not encodable"}"#.utf8)
        data.append(UInt8(ascii: "\n"))
        return data
    }

    /// The value a line (without its newline) holds, or `nil`.
    package static func value<Value: Decodable>(_ type: Value.Type, from line: some Collection<UInt8>) -> Value? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(type, from: Data(line))
    }
}
