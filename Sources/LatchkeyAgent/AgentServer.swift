import Foundation
import LatchkeyRecords
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// `latchkey agent`'s socket: a unix socket of mode 0600 that answers ``AgentRequest``s within
/// one ``AgentPolicy``, through an ``AgentBackend``.
///
/// It holds at most ``Limits/connections`` connections (one more is answered
/// ``AgentAnswer/Failure/busy`` and closed), reads lines of at most ``Limits/lineLength`` bytes,
/// closes a connection idle for ``Limits/idleTime`` or whose request line takes longer than
/// ``Limits/lineTime`` to arrive (a slow writer), and answers ``Limits/budget``'s requests at
/// most, the rest ``AgentAnswer/Failure/busy``: a flood of connections costs it a bounded amount
/// of memory, and no peer can hold every connection. A peer that goes away mid-request loses its
/// answer, nothing else.
public final class AgentServer: Sendable {
    /// How much one socket takes at once.
    public struct Limits: Sendable, Hashable {
        /// Connections open at once.
        public var connections: Int
        /// The longest request line, in bytes.
        public var lineLength: Int
        /// How long a connection may send nothing.
        public var idleTime: Duration
        /// How long a request line may take to arrive, from its first byte.
        public var lineTime: Duration
        /// The requests the socket answers over time; every one when `nil`.
        public var budget: RequestBudget?

        /// Creates limits; the defaults suit one user's tools.
        public init(
            connections: Int = 64, lineLength: Int = 16_384, idleTime: Duration = .seconds(30),
            lineTime: Duration = .seconds(10), budget: RequestBudget? = nil
        ) {
            self.connections = connections
            self.lineLength = lineLength
            self.idleTime = idleTime
            self.lineTime = lineTime
            self.budget = budget
        }

        /// A forwarded socket's: 20 requests a second, 100 at once.
        public static let forwarded = Limits(budget: RequestBudget(perSecond: 20, burst: 100))
    }

    /// Where the socket is.
    public let path: String
    private let channel: NIOAsyncChannel<Connection, Never>
    private let policy: AgentPolicy
    private let backend: any AgentBackend
    private let confirm: @Sendable (AgentUse) async -> Bool
    private let record: @Sendable (AgentUse) -> Void
    private let limits: Limits
    private let logger: Logger
    private let open = NIOLockedValueBox(0)
    private let budget: NIOLockedValueBox<RequestBudget?>

    /// One accepted connection, with its peer's user id.
    struct Connection: Sendable {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        let peerUserID: UInt32?
    }

    /// Listens at `path` (an old socket there is replaced), mode 0600. `confirm` asks whether a
    /// use may go ahead (called only when the policy says so); `record` is told of every use.
    public static func listen(
        at path: String, policy: AgentPolicy, backend: any AgentBackend, limits: Limits = Limits(),
        logger: Logger, confirm: @escaping @Sendable (AgentUse) async -> Bool = { _ in false },
        record: @escaping @Sendable (AgentUse) -> Void = { _ in }
    ) async throws -> AgentServer {
        // Created 0600 from the start: no moment in which another user could connect.
        let previous = umask(0o177)
        defer { umask(previous) }
        let lineLength = limits.lineLength
        let lineTime = TimeAmount(limits.lineTime)
        let idle = TimeAmount(limits.idleTime)
        // One loop for the socket and every connection: the tasks that answer run on it too.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let channel = try await ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { child in
                Self.peerUserID(of: child).flatMapThrowing { uid in
                    try child.pipeline.syncOperations.addHandlers(
                        IdleStateHandler(readTimeout: idle), CloseWhenIdle(),
                        ByteToMessageHandler(AgentLineDecoder(limit: lineLength, time: lineTime)))
                    return Connection(
                        channel: try NIOAsyncChannel(wrappingChannelSynchronously: child), peerUserID: uid)
                }
            }
        return AgentServer(
            path: path, channel: channel, policy: policy, backend: backend, confirm: confirm, record: record,
            limits: limits, logger: logger)
    }

    private init(
        path: String, channel: NIOAsyncChannel<Connection, Never>, policy: AgentPolicy, backend: any AgentBackend,
        confirm: @escaping @Sendable (AgentUse) async -> Bool, record: @escaping @Sendable (AgentUse) -> Void,
        limits: Limits, logger: Logger
    ) {
        self.path = path
        self.channel = channel
        self.policy = policy
        self.backend = backend
        self.confirm = confirm
        self.record = record
        self.limits = limits
        self.logger = logger
        self.budget = NIOLockedValueBox(limits.budget)
    }

    /// Whether the socket's budget answers one more request now.
    private func admitted() -> Bool {
        let now = ContinuousClock.now - Self.started
        return budget.withLockedValue { budget in budget?.admit(at: now) ?? true }
    }

    private static let started = ContinuousClock.now

    /// Serves until the socket is closed (``close()``, or a `stop` request).
    public func run() async throws {
        let executor = EventLoopTaskExecutor(channel.channel.eventLoop)
        try await withTaskExecutorPreference(executor) {
            try await serveConnections()
        }
    }

    /// Accepts connections, each served by a task of its own (which prefers the loop's executor,
    /// as this one does).
    private func serveConnections() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            try await channel.executeThenClose { inbound in
                for try await connection in inbound {
                    let admitted = open.withLockedValue { count in
                        guard count < limits.connections else { return false }
                        count += 1
                        return true
                    }
                    group.addTask {
                        if admitted {
                            await self.serve(connection)
                            self.open.withLockedValue { $0 -= 1 }
                        } else {
                            await Self.turnAway(connection)
                        }
                    }
                }
            }
        }
    }

    /// Stops listening: ``run()`` returns once the connections being served are done.
    public func close() async {
        try? await channel.channel.close()
    }

    private static func turnAway(_ connection: Connection) async {
        try? await connection.channel.executeThenClose { _, outbound in
            try await outbound.write(
                AgentCoding.encode(AgentAnswer.failed(.busy, "The agent has as many connections as it takes.")))
        }
    }

    private func serve(_ connection: Connection) async {
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                for try await line in inbound {
                    let (answer, stop) = await respond(to: line, from: connection.peerUserID)
                    try await outbound.write(AgentCoding.encode(answer))
                    if stop {
                        await close()
                        return
                    }
                }
            }
        } catch {
            logger.debug("an agent connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// The answer to one line, and whether the agent is to stop.
    private func respond(to line: ByteBuffer, from peer: UInt32?) async -> (AgentAnswer, Bool) {
        let read = AgentCoding.versionedRequest(from: line)
        if let version = read?.version, version > AgentWire.version {
            return (
                .failed(
                    .invalid,
                    "The request speaks the agent's wire version \(version); this agent speaks \(AgentWire.version). Restart the agent from the build its clients come from."
                ), false
            )
        }
        guard let asked = read?.request else {
            return (.failed(.invalid, "The request is not one the agent reads."), false)
        }
        guard admitted() else {
            let most = Int(limits.budget?.perSecond ?? 0)
            return (
                .failed(.busy, "This socket answers \(most) requests a second at most: try again in a moment."), false
            )
        }
        if let named = asked.store, let own = backend.storeName, named != own {
            return (.failed(.refused, "This agent keeps another store than \(named)."), false)
        }
        switch policy.decide(asked) {
        case .refuse(let reason):
            record(AgentUse(peerUserID: peer, request: asked, outcome: "refused: \(reason)"))
            return (.failed(.refused, reason), false)
        case .answer(let request):
            // A rejection and a description hand nothing out: nothing to confirm.
            if policy.confirmsEachUse, request.operation != .reject, request.operation != .describe {
                guard await confirm(AgentUse(peerUserID: peer, request: request, outcome: "asked")) else {
                    record(AgentUse(peerUserID: peer, request: request, outcome: "refused: not confirmed"))
                    return (.failed(.refused, "The use was not confirmed on the agent's machine."), false)
                }
            }
            if request.operation == .stop {
                record(AgentUse(peerUserID: peer, request: request, outcome: "stopping"))
                return (AgentAnswer(message: "The agent stops."), true)
            }
            var answer = await backend.answer(request)
            // The resources a socket is limited to are ones its owner paired with the account.
            if request.operation == .describe, answer.failure == nil, let resources = policy.resources {
                answer.resources = (answer.resources ?? []) + resources
            }
            if answer.failure == nil, answer.token != nil || answer.authorization != nil,
                !policy.admits(expiresAt: answer.expiresAt, now: Date())
            {
                answer = .failed(
                    .refused,
                    "The token lives longer than this socket's limit of \(Int(policy.maximumLifetime ?? 0)) s."
                )
            }
            record(
                AgentUse(
                    peerUserID: peer, request: request,
                    outcome: answer.failure.map { "\($0.rawValue): \(answer.message ?? "")" } ?? "answered"))
            return (answer, false)
        }
    }

    /// `struct ucred` (Linux's `SO_PEERCRED`), which Glibc's module leaves out: three 32-bit
    /// fields, laid out as C lays them out.
    struct PeerCredentials: Sendable {
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
    }

    /// The user id of the peer of `channel` (`SO_PEERCRED`), where the system says.
    static func peerUserID(of channel: any Channel) -> EventLoopFuture<UInt32?> {
        #if os(Linux)
            // NIO's only way to a socket option of another type than an integer (`ucred` is three):
            // its socket channels are `SocketOptionProvider`s, which `Channel` does not declare.
            guard let provider = channel as? any SocketOptionProvider else {
                return channel.eventLoop.makeSucceededFuture(nil)
            }
            return provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)
            )
            .map { (credentials: PeerCredentials) in Optional(credentials.uid) }
            .recover { _ in nil }
        #else
            return channel.eventLoop.makeSucceededFuture(nil)
        #endif
    }
}
