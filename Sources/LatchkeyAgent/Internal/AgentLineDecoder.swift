import NIOCore

/// Splits what a socket reads into lines (without their `\n`), refusing a line longer than
/// `limit` bytes, or one still unfinished `time` after its first byte came (a slow writer): a
/// peer cannot make the agent hold more than that for one connection, nor hold it for long.
struct AgentLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}
    struct LineTooSlow: Error {}

    let limit: Int
    let time: TimeAmount
    /// When the first byte of the line being read came.
    private var started: NIODeadline?

    init(limit: Int, time: TimeAmount) {
        self.limit = limit
        self.time = time
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > limit { throw LineTooLong() }
            if buffer.readableBytes > 0 {
                let now = NIODeadline.now()
                if let started, now - started > time { throw LineTooSlow() }
                if started == nil { started = now }
            }
            return .needMoreData
        }
        let length = end - buffer.readerIndex
        guard length <= limit, let line = buffer.readSlice(length: length) else { throw LineTooLong() }
        buffer.moveReaderIndex(forwardBy: 1)
        started = nil
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        // What is left without its newline is not a request.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

/// Closes a connection that has sent nothing for a while (with `IdleStateHandler` before it):
/// an idle peer does not keep one of the agent's connections.
final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
