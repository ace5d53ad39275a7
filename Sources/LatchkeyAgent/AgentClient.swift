import Foundation
public import LatchkeyRecords
import NIOCore
import NIOPosix

/// Asks `latchkey agent` over its socket (`LATCHKEY_AGENT_SOCK`): one request, one answer, per
/// connection.
public struct AgentClient: Sendable {
    /// Why the agent could not be asked.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong, for a person.
        public var description: String
    }

    /// The agent's socket.
    public let path: String
    /// How long an answer may take (a use confirmed by a person takes a while).
    public var timeout: Duration

    /// A client of the agent at `path`.
    public init(path: String, timeout: Duration = .seconds(120)) {
        self.path = path
        self.timeout = timeout
    }

    /// The agent's answer to `request`.
    public func ask(_ request: AgentRequest) async throws(Failure) -> AgentAnswer {
        let path = self.path
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(AgentLineDecoder(limit: 4 << 20, time: .minutes(10))))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            // The other end must be the user's own process: a socket another user made answers
            // with tokens of its choosing.
            if let peer = try await AgentServer.peerUserID(of: channel.channel).get(), peer != getuid() {
                try? await channel.channel.close()
                throw Failure(
                    description: "The agent socket at \(path) is served by another user (uid \(peer)): refused.")
            }
            let line = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
                group.addTask {
                    try await channel.executeThenClose { inbound, outbound in
                        try await outbound.write(AgentCoding.encode(request))
                        var lines = inbound.makeAsyncIterator()
                        return try await lines.next()
                    }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    channel.channel.close(promise: nil)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let line else { throw Failure(description: "The agent at \(path) did not answer.") }
            guard let answer = AgentCoding.answer(from: line) else {
                throw Failure(description: "The agent at \(path) answered something it should not have.")
            }
            return answer
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "No agent answers at \(path) (\(error)).")
        }
    }
}
