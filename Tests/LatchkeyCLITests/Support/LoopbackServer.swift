import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle

/// A Hummingbird server of a test's own on 127.0.0.1 and a free port, running until stopped.
struct LoopbackServer: Sendable {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts `responder` (over `server`, plain HTTP/1.1 unless TLS is asked for) and returns
    /// once it accepts connections.
    static func start(
        _ responder: CallbackResponder<BasicRequestContext>, server: HTTPServerBuilder = .http1()
    ) async throws -> LoopbackServer {
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let quiet = Logger(label: "test-server", factory: { _ in SwiftLogNoOpLogHandler() })
        let application = Application(
            responder: responder, server: server,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: quiet)
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: quiet))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return LoopbackServer(port: port, group: group, task: task)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
