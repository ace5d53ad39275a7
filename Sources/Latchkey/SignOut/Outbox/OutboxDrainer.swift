public import ServiceLifecycle

/// Sends the outbox's waiting server steps on a schedule, as a swift-service-lifecycle
/// `Service`: a server adds it to its `ServiceGroup`, and queued revocations and sign-outs go out
/// without anyone asking.
///
/// It drains once when it starts, then every `interval` on the store's clock (so a test moves
/// time instead of waiting), until the group shuts down gracefully or its task is cancelled.
/// Each drain's report goes to `onDrain`.
///
/// ```swift
/// let drainer = OutboxDrainer(store: store, every: .seconds(30))
/// let group = ServiceGroup(services: [server, drainer], logger: logger)
/// try await group.run()
/// ```
public struct OutboxDrainer: Service {
    /// The store whose outbox is drained.
    public let store: CredentialStore
    /// The time between two drains.
    public let interval: Duration
    /// How each drain works (due entries only, by default).
    public let options: DrainOptions
    private let clock: any LatchkeyClock
    private let onDrain: @Sendable (DrainReport) async -> Void

    /// Creates a drainer; it waits on `clock`, the store's own unless given.
    public init(
        store: CredentialStore, every interval: Duration = .seconds(30), options: DrainOptions = DrainOptions(),
        clock: (any LatchkeyClock)? = nil, onDrain: @escaping @Sendable (DrainReport) async -> Void = { _ in }
    ) {
        self.store = store
        self.interval = interval
        self.options = options
        self.clock = clock ?? store.clock
        self.onDrain = onDrain
    }

    public func run() async throws {
        await onDrain(await store.drainOutbox(options))
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let (clock, interval) = (self.clock, self.interval)
            do {
                try await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) }
            } catch {
                return
            }
            await onDrain(await store.drainOutbox(options))
        }
    }
}
