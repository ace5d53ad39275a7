import LatchkeyRecords
import NIOCore

/// ``AgentWire``'s lines as NIO's buffers.
enum AgentCoding {
    static func encode<Value: Encodable>(_ value: Value) -> ByteBuffer {
        ByteBuffer(bytes: AgentWire.line(value))
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from line: ByteBuffer) -> Value? {
        AgentWire.value(type, from: line.readableBytesView)
    }
}
