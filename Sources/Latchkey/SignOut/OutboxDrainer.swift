import AsyncAlgorithms
public import ServiceLifecycle

/// Retries the revocation outbox on a schedule, as a swift-service-lifecycle `Service`: a server
/// adds it to its `ServiceGroup`, and queued revocations go out without anyone asking.
///
/// It drains once when it starts, then every `interval` on its clock (a `Clock` value, so a test
/// moves time instead of waiting), until the group shuts down gracefully or its task is
/// cancelled. Each drain's report goes to `onDrain`.
///
/// ```swift
/// let drainer = OutboxDrainer(store: store, every: .seconds(30))
/// let group = ServiceGroup(services: [server, drainer], logger: logger)
/// try await group.run()
/// ```
public struct OutboxDrainer<C: Clock>: Service where C.Duration == Duration {
    /// The store whose outbox is drained.
    public let store: CredentialStore
    /// The time between two drains.
    public let interval: Duration
    /// How each drain works (due entries only, by default).
    public let options: DrainOptions
    private let clock: C
    private let onDrain: @Sendable (DrainReport) async -> Void

    /// Creates a drainer on `clock`.
    public init(
        store: CredentialStore, every interval: Duration = .seconds(30), options: DrainOptions = DrainOptions(),
        clock: C, onDrain: @escaping @Sendable (DrainReport) async -> Void = { _ in }
    ) {
        self.store = store
        self.interval = interval
        self.options = options
        self.clock = clock
        self.onDrain = onDrain
    }

    public func run() async throws {
        await onDrain(await store.drainOutbox(options))
        for await _ in AsyncTimerSequence(interval: interval, clock: clock).cancelOnGracefulShutdown() {
            await onDrain(await store.drainOutbox(options))
        }
    }
}

extension OutboxDrainer where C == ContinuousClock {
    /// Creates a drainer on the system's continuous clock.
    public init(
        store: CredentialStore, every interval: Duration = .seconds(30), options: DrainOptions = DrainOptions(),
        onDrain: @escaping @Sendable (DrainReport) async -> Void = { _ in }
    ) {
        self.init(store: store, every: interval, options: options, clock: ContinuousClock(), onDrain: onDrain)
    }
}
