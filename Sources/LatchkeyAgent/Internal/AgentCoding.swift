import LatchkeyRecords
import NIOCore

/// ``AgentWire``'s lines as NIO's buffers.
enum AgentCoding {
    static func encode(_ request: AgentRequest) -> ByteBuffer { ByteBuffer(bytes: AgentWire.line(request)) }

    static func encode(_ answer: AgentAnswer) -> ByteBuffer { ByteBuffer(bytes: AgentWire.line(answer)) }

    static func versionedRequest(from line: ByteBuffer) -> (version: Int, request: AgentRequest?)? {
        AgentWire.versionedRequest(from: line.readableBytesView)
    }

    static func answer(from line: ByteBuffer) -> AgentAnswer? { AgentWire.answer(from: line.readableBytesView) }
}
