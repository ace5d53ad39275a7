import Foundation
import NIOCore

/// How requests and answers travel: one JSON object per line, dates as seconds since 1970.
enum AgentCoding {
    static func encode<Value: Encodable>(_ value: Value) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        var data = (try? encoder.encode(value)) ?? Data(#"{"failure":"failed","message":"not encodable"}"#.utf8)
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from line: ByteBuffer) -> Value? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(type, from: Data(line.readableBytesView))
    }
}
