public import LatchkeyRecords

/// What answers an agent's requests once its socket's limits allowed them: the store and its
/// accounts, in the agent's process (`latchkey agent` gives one over its opened store).
public protocol AgentBackend: Sendable {
    /// The store it answers from, by name (a path or URL): a request that names another
    /// (``AgentRequest/store``) is refused before anything else, a confirmation included.
    var storeName: String? { get }

    /// The answer to `request`, already narrowed to the socket's limits.
    func answer(_ request: AgentRequest) async -> AgentAnswer
}

/// One use of an agent socket, as it is logged and confirmed: who asked (the peer's user id),
/// what, and what came of it. Never a token.
public struct AgentUse: Sendable, Hashable, CustomStringConvertible {
    /// The user id of the process on the other end of the socket (for a socket forwarded over
    /// ssh, the local ssh client's); `nil` where the system does not say.
    public var peerUserID: UInt32?
    /// The request, narrowed to the socket's limits.
    public var request: AgentRequest
    /// What came of it: `answered`, or the failure.
    public var outcome: String

    /// Creates a use.
    public init(peerUserID: UInt32?, request: AgentRequest, outcome: String) {
        self.peerUserID = peerUserID
        self.request = request
        self.outcome = outcome
    }

    /// `uid 1000: token, account alice, resource https://api.example: answered`: one line,
    /// whatever the asker sent (each value made visible, ``VisibleText``).
    public var description: String {
        "uid \(peerUserID.map(String.init) ?? "unknown"): \(request): \(VisibleText.of(outcome))"
    }
}
