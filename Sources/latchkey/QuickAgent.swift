import LatchkeyCommandLine
import LatchkeyRecords

/// `latchkey agent`, asked by the quick path when the store's token must be refreshed: the
/// agent refreshes in its own process (once for every caller, as any refresh), so that the call
/// costs a round trip on a socket instead of a `latchkey-full` start. A few system calls, no
/// event loop: this process does one thing and ends. `nil` (hand over) when no agent answers,
/// or it refuses.
enum QuickAgent {
    /// The variable that names the agent's socket.
    static let variable = "LATCHKEY_AGENT_SOCK"

    /// How long the agent may take (a refresh at a slow provider), in seconds.
    static let timeout = 30

    /// `stored`'s access token (or ID token), refreshed by the agent of `store`: the token and
    /// its expiry, or `nil`.
    static func refreshed(
        _ stored: StoredCredential, of store: QuickStore, idToken: Bool = false, validity: TimeInterval? = nil,
        _ environment: [String: String]
    ) -> (token: String, expiresAt: Date?)? {
        guard idToken || stored.token.dpop == nil,
            let answer = answer(
                AgentRequest(
                    idToken ? .idToken : .token, account: stored.id.rawValue, minimumValidity: validity,
                    store: store.location.storeName), environment),
            let token = answer.token
        else { return nil }
        return (token, answer.expiresAt)
    }

    static func answer(_ request: AgentRequest, _ environment: [String: String]) -> AgentAnswer? {
        guard let answer = ask(request, environment), answer.failure == nil else { return nil }
        return answer
    }

    /// The agent's answer, a refusal included; `nil` when none answers.
    static func ask(_ request: AgentRequest, _ environment: [String: String]) -> AgentAnswer? {
        guard let path = environment[variable], !path.isEmpty else { return nil }
        return ask(request, at: path)
    }

    private static func ask(_ request: AgentRequest, at path: String) -> AgentAnswer? {
        // A socket that is not surely the user's own is the full tool's to refuse, saying why.
        guard AgentSocketCheck.refusal(path) == nil else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { field in
            field.copyBytes(from: bytes)
            field[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return nil }
        if let peer = AgentSocketCheck.peerUserID(descriptor), peer != getuid() { return nil }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        // `send` with MSG_NOSIGNAL: an agent gone mid-request is a nil, not a SIGPIPE.
        let message = AgentWire.line(request)
        var sent = 0
        while sent < message.count {
            let count = message[sent...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return nil }
            sent += count
        }
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while !line.contains(UInt8(ascii: "\n")), line.count < 1 << 20 {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return nil }
            line += buffer[..<count]
        }
        guard let end = line.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        return AgentWire.answer(from: line[..<end])
    }
}
