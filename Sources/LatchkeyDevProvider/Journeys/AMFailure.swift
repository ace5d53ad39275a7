import HTTPTypes
import Hummingbird

/// An AM-style error answer: `{"code": 401, "reason": "Unauthorized", "message": "Login failure"}`,
/// as PingAM's REST endpoints send it.
struct AMFailure: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A journey that ended without signing in.
    static let signInFailed = AMFailure(.unauthorized, "Login failure")
    /// A request without a valid session.
    static let accessDenied = AMFailure(.unauthorized, "Access Denied")

    static func badRequest(_ message: String) -> AMFailure { AMFailure(.badRequest, message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var body: [String: Any] = ["code": status.code, "reason": status.reasonPhrase, "message": message]
        if status == .unauthorized { body["detail"] = ["failureUrl": ""] }
        return Reply.json(body, status: status)
    }
}
