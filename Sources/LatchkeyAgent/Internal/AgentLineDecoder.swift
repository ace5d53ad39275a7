import NIOCore

/// Splits what a socket reads into lines (without their `\n`), refusing a line longer than
/// `limit` bytes: a peer cannot make the agent hold more than that for one connection.
struct AgentLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    let limit: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > limit { throw LineTooLong() }
            return .needMoreData
        }
        let length = end - buffer.readerIndex
        guard length <= limit, let line = buffer.readSlice(length: length) else { throw LineTooLong() }
        buffer.moveReaderIndex(forwardBy: 1)
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
