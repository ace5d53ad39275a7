import NIOConcurrencyHelpers

/// The clients the provider knows: those of its configuration, those registered through its
/// registration endpoint (RFC 7591) since it started, and those whose id is the URL of their
/// metadata document (adopted when first seen); the last two live as long as it runs.
final class ClientDirectory: Sendable {
    private let configured: [String: DevProviderConfiguration.Client]
    private let registered = NIOLockedValueBox<[String: DevProviderConfiguration.Client]>([:])
    private let adopted = NIOLockedValueBox<[String: DevProviderConfiguration.Client]>([:])
    /// The registration access token of each registered client (RFC 7592 §3).
    private let managementTokens = NIOLockedValueBox<[String: String]>([:])

    init(configured: [DevProviderConfiguration.Client]) {
        self.configured = Dictionary(configured.map { ($0.clientID, $0) }) { first, _ in first }
    }

    /// The client with `id`, configured, registered or adopted.
    func client(_ id: String) -> DevProviderConfiguration.Client? {
        configured[id] ?? registered.withLockedValue { $0[id] } ?? adopted.withLockedValue { $0[id] }
    }

    /// Keeps a client described by its metadata document, under its id (the document's URL).
    func adopt(_ client: DevProviderConfiguration.Client) {
        adopted.withLockedValue { $0[client.clientID] = client }
    }

    /// Adds a registered client, managed with `token`; its id is new (the caller makes it random).
    func register(_ client: DevProviderConfiguration.Client, managedWith token: String) {
        registered.withLockedValue { $0[client.clientID] = client }
        managementTokens.withLockedValue { $0[client.clientID] = token }
    }

    /// The registered client `id` when `token` is its registration access token; `nil` for any
    /// other (an unknown client answers as a wrong token does, RFC 7592 §2).
    func managed(_ id: String, token: String) -> DevProviderConfiguration.Client? {
        guard managementTokens.withLockedValue({ $0[id] }) == token else { return nil }
        return registered.withLockedValue { $0[id] }
    }

    /// Forgets a registered client and its registration access token (RFC 7592 §2.3).
    func unregister(_ id: String) {
        registered.withLockedValue { $0[id] = nil }
        managementTokens.withLockedValue { $0[id] = nil }
    }
}
