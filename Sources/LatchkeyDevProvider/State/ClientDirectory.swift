import NIOConcurrencyHelpers

/// The clients the provider knows: those of its configuration, and those registered through
/// its registration endpoint (RFC 7591) since it started, which live as long as it runs.
final class ClientDirectory: Sendable {
    private let configured: [String: DevProviderConfiguration.Client]
    private let registered = NIOLockedValueBox<[String: DevProviderConfiguration.Client]>([:])

    init(configured: [DevProviderConfiguration.Client]) {
        self.configured = Dictionary(configured.map { ($0.clientID, $0) }) { first, _ in first }
    }

    /// The client with `id`, configured or registered.
    func client(_ id: String) -> DevProviderConfiguration.Client? {
        configured[id] ?? registered.withLockedValue { $0[id] }
    }

    /// Adds a registered client; its id is new (the caller makes it random).
    func register(_ client: DevProviderConfiguration.Client) {
        registered.withLockedValue { $0[client.clientID] = client }
    }
}
