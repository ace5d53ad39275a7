public import Foundation
import NIOCore
import NIOPosix

extension MCPProxy {
    /// The longest message the client may send: a longer line is refused, not buffered.
    static let maximumMessageSize = 16 << 20
}

/// The stdio side of an ``MCPProxy``: the client's messages, one per line, read from a file
/// descriptor, and the proxy's written to another (MCP "stdio" transport).
public enum MCPStandardIO {
    /// Why the proxy's stdio could not be served.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Runs `proxy` over `input` and `output` (by default standard input and output) until
    /// the client closes `input`; then finishes the proxy (its messages in flight answered, its
    /// session ended). The descriptors are closed at the end. A line longer than 16 MiB ends it
    /// with a ``Failure``.
    ///
    /// - Parameter makeProxy: makes the proxy, given where it delivers its messages.
    public static func serve(
        input: CInt = STDIN_FILENO, output: CInt = STDOUT_FILENO,
        proxy makeProxy: @escaping @Sendable (@escaping @Sendable (Data) async -> Void) async throws -> MCPProxy
    ) async throws {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .takingOwnershipOfDescriptors(input: input, output: output) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                }
        } catch {
            throw Failure(
                description:
                    "Standard input and output must be pipes or a terminal (an MCP client starts the proxy with pipes): \(error)"
            )
        }
        try await channel.executeThenClose { inbound, outbound in
            let proxy = try await makeProxy { message in
                var line = ByteBuffer(bytes: message)
                line.writeInteger(UInt8(ascii: "\n"))
                try? await outbound.write(line)
            }
            var pending = ByteBuffer()
            do {
                for try await var piece in inbound {
                    pending.writeBuffer(&piece)
                    while let end = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                        let length = end - pending.readerIndex
                        guard var line = pending.readSlice(length: length) else { break }
                        pending.moveReaderIndex(forwardBy: 1)
                        if line.readableBytesView.last == UInt8(ascii: "\r") {
                            line.moveWriterIndex(to: line.writerIndex - 1)
                        }
                        if line.readableBytes > 0 { await proxy.forward(Data(line.readableBytesView)) }
                    }
                    pending.discardReadBytes()
                    guard pending.readableBytes <= MCPProxy.maximumMessageSize else {
                        await proxy.finish()
                        throw Failure(description: "The client sent a message longer than 16 MiB.")
                    }
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                // The input failed: what was sent so far is still answered.
            }
            if pending.readableBytes > 0 { await proxy.forward(Data(pending.readableBytesView)) }
            await proxy.finish()
        }
    }
}
