import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyTestSupport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// A git server over HTTP on loopback: Debian's `git http-backend` as CGI behind a small
/// Hummingbird server that lets a request through only with HTTP Basic credentials whose password
/// `isLive` accepts (a live access token, asked of the development provider).
final class GitServer: Sendable {
    struct Counters: Sendable {
        /// Requests without credentials (answered 401, so git asks its helpers).
        var anonymous = 0
        /// Requests whose password was refused.
        var refused = 0
        /// Requests let through.
        var served = 0
        /// The passwords that were let through.
        var tokens: Set<String> = []
    }

    let root: TemporaryFolder
    private let server: LoopbackServer
    private let state: State
    var port: Int { server.port }

    /// What the responder and the test share.
    final class State: Sendable {
        let counters = NIOLockedValueBox(Counters())
        /// Refuse the next request with credentials, as a server that revoked them would.
        let refuseNext = NIOLockedValueBox(false)
    }

    /// `host:port`, as git names the host to its credential helpers.
    var host: String { "127.0.0.1:\(port)" }
    func url(_ repository: String) -> String { "http://\(host)/\(repository)" }
    var counters: Counters { state.counters.withLockedValue { $0 } }
    func refuseNextRequest() { state.refuseNext.withLockedValue { $0 = true } }

    private init(root: TemporaryFolder, server: LoopbackServer, state: State) {
        self.root = root
        self.server = server
        self.state = state
    }

    static func start(isLive: @escaping @Sendable (String) async -> Bool) async throws -> GitServer {
        let root = try TemporaryFolder()
        let state = State()
        let projectRoot = root.path
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            let challenge: HTTPFields = [.wwwAuthenticate: "Basic realm=\"latchkey-test\""]
            guard let (user, password) = basicCredentials(request.headers[.authorization]) else {
                state.counters.withLockedValue { $0.anonymous += 1 }
                return Response(status: .unauthorized, headers: challenge)
            }
            let refused = state.refuseNext.withLockedValue { refuse in
                defer { refuse = false }
                return refuse
            }
            guard !refused, await isLive(password) else {
                state.counters.withLockedValue { $0.refused += 1 }
                return Response(status: .unauthorized, headers: challenge)
            }
            state.counters.withLockedValue {
                $0.served += 1
                $0.tokens.insert(password)
            }
            return try await cgi(request, user: user, root: projectRoot)
        }
        let server = try await LoopbackServer.start(responder)
        return GitServer(root: root, server: server, state: state)
    }

    func stop() async {
        await server.stop()
        root.cleanUp()
    }

    /// The user and password of an `Authorization: Basic` header.
    private static func basicCredentials(_ header: String?) -> (String, String)? {
        guard let header, header.hasPrefix("Basic "), let data = Data(base64Encoded: String(header.dropFirst(6))),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// Runs `git http-backend` for `request` (CGI/1.1) and turns its answer into a response.
    private static func cgi(_ request: Request, user: String, root: String) async throws -> Response {
        let body = try await request.body.collect(upTo: 256 << 20)
        var environment = [
            "GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": request.method.rawValue, "PATH_INFO": request.uri.path,
            "QUERY_STRING": request.uri.query ?? "", "CONTENT_LENGTH": "\(body.readableBytes)",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        if let type = request.headers[.contentType] { environment["CONTENT_TYPE"] = type }
        if let encoding = request.headers[.contentEncoding] { environment["HTTP_CONTENT_ENCODING"] = encoding }
        if let name = HTTPField.Name("Git-Protocol"), let version = request.headers[name] {
            environment["GIT_PROTOCOL"] = version
        }
        let (_, output) = try await ChildProcess.runBinary(
            URL(fileURLWithPath: "/usr/lib/git-core/git-http-backend"), [], environment: environment,
            input: Array(body.readableBytesView))
        // The CGI answer: header lines, a blank line, the body.
        let split =
            output.firstRange(of: Array("\r\n\r\n".utf8)).map { ($0.lowerBound, $0.upperBound) }
            ?? output.firstRange(of: Array("\n\n".utf8)).map { ($0.lowerBound, $0.upperBound) }
            ?? (output.count, output.count)
        var status = HTTPResponse.Status.ok
        var headers = HTTPFields()
        for line in String(decoding: output[..<split.0], as: UTF8.self).split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name.lowercased() == "status" {
                status = HTTPResponse.Status(code: Int(value.prefix(3)) ?? 500)
            } else if let field = HTTPField.Name(name) {
                headers.append(HTTPField(name: field, value: value))
            }
        }
        return Response(
            status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: output[split.1...])))
    }
}
