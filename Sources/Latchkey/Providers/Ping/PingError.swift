/// What PingAM said when it refused a journey or session call: AM's JSON error
/// (`{"code": 401, "reason": "Unauthorized", "message": "Login failure"}`).
/// ``ProviderError/underlying`` carries it; the generic error knows nothing of AM.
public struct PingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// AM's `code`, an HTTP status.
    public var code: Int
    /// AM's `reason`, the status text (`Unauthorized`).
    public var reason: String?
    /// AM's `message` (`Login failure`), with any secret Latchkey sent removed.
    public var message: String?

    /// Creates an error.
    public init(code: Int, reason: String?, message: String?) {
        self.code = code
        self.reason = reason
        self.message = message
    }

    public var description: String {
        "AM answered \(code)\(reason.map { " \($0)" } ?? "")\(message.map { ": \($0)" } ?? "")"
    }
}

extension PingError: ShownCause {}
