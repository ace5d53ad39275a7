import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The provider's endpoints, as fault injection and request counters name them.
///
/// The Ping realm's OAuth endpoints (below `/oauth2/realms/root/realms/REALM`) count as the
/// root issuer's endpoints of the same name: a fault on ``authorization`` applies to both.
public enum DevProviderEndpoint: String, Sendable, Codable, CaseIterable, Hashable {
    /// OpenID Connect Discovery's `/.well-known/openid-configuration`.
    case discovery
    /// RFC 8414's `/.well-known/oauth-authorization-server`.
    case metadata
    /// The key set ID tokens are signed with.
    case jwks
    /// The authorization endpoint, where a browser signs in.
    case authorization
    /// The token endpoint: every grant, refresh included.
    case token
    /// RFC 7009 revocation.
    case revocation
    /// RFC 7662 introspection.
    case introspection
    /// OpenID Connect's userinfo.
    case userinfo
    /// RP-Initiated Logout's end-session endpoint.
    case endSession = "end_session"
    /// Sign-out on every device: every session and grant of the access token's user ends, as
    /// Cognito's `GlobalSignOut` does.
    case globalSignOut = "global_signout"
    /// RFC 8628's device authorization endpoint.
    case deviceAuthorization = "device_authorization"
    /// The page where a device code is entered.
    case deviceVerification = "device"
    /// Dynamic client registration (RFC 7591).
    case registration = "register"
    /// PingAM's journey endpoint, `json/realms/root/realms/REALM/authenticate`.
    case journey = "authenticate"
    /// PingAM's `json/serverinfo/*`, which names the session cookie.
    case serverInfo = "serverinfo"
    /// PingAM's session validation, `json/realms/root/realms/REALM/sessions?_action=validate`.
    case sessionValidation = "session_validate"
    /// PingAM's session logout, `json/realms/root/realms/REALM/sessions?_action=logout`.
    case sessionLogout = "session_logout"

    /// The path the endpoint is served at, in the default realm for the journey endpoints.
    public var path: String { path(realm: DevProviderConfiguration.defaultRealm) }

    /// The path the endpoint is served at, the journey endpoints in `realm`.
    public func path(realm: String) -> String {
        switch self {
        case .discovery: "/.well-known/openid-configuration"
        case .metadata: "/.well-known/oauth-authorization-server"
        case .jwks: "/jwks"
        case .authorization: "/authorize"
        case .token: "/token"
        case .revocation: "/revoke"
        case .introspection: "/introspect"
        case .userinfo: "/userinfo"
        case .endSession: "/end-session"
        case .globalSignOut: "/global-signout"
        case .deviceAuthorization: "/device_authorization"
        case .deviceVerification: "/device"
        case .registration: "/register"
        case .journey: "/json/realms/root/realms/\(realm)/authenticate"
        case .serverInfo: "/json/serverinfo/*"
        case .sessionValidation, .sessionLogout: "/json/realms/root/realms/\(realm)/sessions"
        }
    }

    /// The query that goes with the path: the sessions endpoints' action.
    var query: String? {
        switch self {
        case .sessionValidation: "_action=validate"
        case .sessionLogout: "_action=logout"
        default: nil
        }
    }

    /// The endpoint a request is for, in `realm`.
    init?(path: String, query: String?, realm: String) {
        var path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let realmIssuer = "/oauth2/realms/root/realms/\(realm)"
        if path.hasPrefix(realmIssuer + "/") { path = String(path.dropFirst(realmIssuer.count)) }
        if path == "/json/realms/root/realms/\(realm)/serverinfo/*" { path = "/json/serverinfo/*" }
        let action = (try? Parameters(encoded: query ?? ""))?.values["_action"]
        guard
            let endpoint = Self.allCases.first(where: {
                $0.path(realm: realm) == path && ($0.query == nil || $0.query == "_action=\(action ?? "")")
            })
        else { return nil }
        self = endpoint
    }
}

/// A misbehaviour to inject into an endpoint's answers.
public struct DevProviderFault: Sendable, Codable, Hashable {
    /// Added before the endpoint answers, in milliseconds.
    public var latencyMilliseconds: Int?
    /// Answer with this status instead: an OAuth `temporarily_unavailable` body for 5xx and 429
    /// (e.g. 503), an HTML page for any other (a firewall's 403).
    public var status: Int?
    /// The `Retry-After` header (seconds) sent with a forced status.
    public var retryAfter: Int?
    /// The `WWW-Authenticate` header sent with a forced status (a resource server's challenge).
    public var wwwAuthenticate: String?
    /// Close the connection without answering.
    public var dropConnection: Bool?
    /// Answer 200 with a body that is not valid JSON.
    public var malformedBody: Bool?
    /// Answer 200 with a JSON body of this many bytes.
    public var oversizedBodyBytes: Int?
    /// Send the answer's body a byte at a time, this many milliseconds apart (the head at once).
    public var trickleMilliseconds: Int?
    /// Hold the answer this many milliseconds after the endpoint has done its work (rotated a
    /// refresh token, say): the window in which a client that goes away loses the answer.
    public var answerDelayMilliseconds: Int?
    /// Fields of the endpoint's JSON answer replaced after it has done its work, each value as
    /// JSON text (`["scope": #"["openid"]"#, "expires_in": #""3600s""#]`): a provider's odd answer.
    public var replacedFields: [String: String]?
    /// Answer 400 with an `error` and an `error_description` that repeat the request's body, as a
    /// careless provider does: for tests that a client never shows what it sent.
    public var echoesRequest: Bool?
    /// Apply to this many requests, then clear; `nil` until cleared.
    public var remaining: Int?

    /// Creates a fault.
    public init(
        latencyMilliseconds: Int? = nil, status: Int? = nil, retryAfter: Int? = nil, wwwAuthenticate: String? = nil,
        dropConnection: Bool? = nil, malformedBody: Bool? = nil, oversizedBodyBytes: Int? = nil,
        trickleMilliseconds: Int? = nil, answerDelayMilliseconds: Int? = nil, replacedFields: [String: String]? = nil,
        echoesRequest: Bool? = nil, remaining: Int? = nil
    ) {
        self.latencyMilliseconds = latencyMilliseconds
        self.status = status
        self.retryAfter = retryAfter
        self.wwwAuthenticate = wwwAuthenticate
        self.dropConnection = dropConnection
        self.malformedBody = malformedBody
        self.oversizedBodyBytes = oversizedBodyBytes
        self.trickleMilliseconds = trickleMilliseconds
        self.answerDelayMilliseconds = answerDelayMilliseconds
        self.replacedFields = replacedFields
        self.echoesRequest = echoesRequest
        self.remaining = remaining
    }

    /// Only added latency.
    public static func latency(milliseconds: Int) -> DevProviderFault { .init(latencyMilliseconds: milliseconds) }
    /// A forced status, e.g. `.status(503, retryAfter: 2)`.
    public static func status(_ code: Int, retryAfter: Int? = nil) -> DevProviderFault {
        .init(status: code, retryAfter: retryAfter)
    }
    /// Connections closed without an answer.
    public static let dropConnection = DevProviderFault(dropConnection: true)
    /// A body that is not JSON.
    public static let malformedBody = DevProviderFault(malformedBody: true)
    /// A JSON body of `bytes` bytes.
    public static func oversizedBody(bytes: Int) -> DevProviderFault { .init(oversizedBodyBytes: bytes) }
    /// The body sent a byte every `milliseconds`, after the head.
    public static func trickle(milliseconds: Int) -> DevProviderFault { .init(trickleMilliseconds: milliseconds) }
}

/// Fault injection and request counters of a running development provider. Safe to use from
/// any task; the admin endpoint (`/admin/…`, loopback only) drives the same object.
public final class DevProviderFaults: Sendable {
    /// The back-channel logouts sent, their shape and their faults.
    public let backChannel = DevProviderBackChannel()

    private struct State {
        var faults: [DevProviderEndpoint: DevProviderFault] = [:]
        var everywhere: DevProviderFault?
        var offline = false
        var counters: [String: Int] = [:]
        var inFlight: [DevProviderEndpoint: Int] = [:]
        var peaks: [DevProviderEndpoint: Int] = [:]
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// Injects `fault` into `endpoint`, or into every endpoint when `endpoint` is `nil`.
    public func set(_ fault: DevProviderFault, for endpoint: DevProviderEndpoint? = nil) {
        state.withLockedValue { state in
            if let endpoint { state.faults[endpoint] = fault } else { state.everywhere = fault }
        }
    }

    /// Clears the fault of `endpoint`, or every fault (and offline) when `endpoint` is `nil`.
    public func clear(_ endpoint: DevProviderEndpoint? = nil) {
        state.withLockedValue { state in
            if let endpoint {
                state.faults[endpoint] = nil
            } else {
                state.faults = [:]
                state.everywhere = nil
                state.offline = false
            }
        }
    }

    /// While offline, every endpoint but the admin one closes connections without answering.
    public var isOffline: Bool {
        get { state.withLockedValue { $0.offline } }
        set { state.withLockedValue { $0.offline = newValue } }
    }

    /// Requests received per endpoint (`token`, `revocation`, …) and per token grant
    /// (`token.refresh_token`, `token.password`, …), since the start or the last reset.
    public var counters: [String: Int] { state.withLockedValue { $0.counters } }

    /// The number of requests counted under `name`.
    public func count(_ name: String) -> Int { state.withLockedValue { $0.counters[name, default: 0] } }

    /// The number of requests `endpoint` received.
    public func count(_ endpoint: DevProviderEndpoint) -> Int { count(endpoint.rawValue) }

    /// The most requests `endpoint` was serving at the same moment, since the start or the
    /// last reset: how a test sees that a client works in parallel without timing it.
    public func peakConcurrency(_ endpoint: DevProviderEndpoint) -> Int {
        state.withLockedValue { $0.peaks[endpoint, default: 0] }
    }

    /// Sets every counter, and every peak concurrency, back to zero.
    public func resetCounters() {
        state.withLockedValue { state in
            state.counters = [:]
            state.peaks = [:]
        }
    }

    /// Marks a request to `endpoint` as being served (`started`) or done.
    func serving(_ endpoint: DevProviderEndpoint, started: Bool) {
        state.withLockedValue { state in
            state.inFlight[endpoint, default: 0] += started ? 1 : -1
            state.peaks[endpoint] = max(state.peaks[endpoint, default: 0], state.inFlight[endpoint, default: 0])
        }
    }

    func increment(_ name: String) { state.withLockedValue { $0.counters[name, default: 0] += 1 } }

    /// Counts a request to `endpoint` and takes the fault that applies to it, if any.
    func take(_ endpoint: DevProviderEndpoint) -> (offline: Bool, fault: DevProviderFault?) {
        state.withLockedValue { state in
            state.counters[endpoint.rawValue, default: 0] += 1
            if state.offline { return (true, nil) }
            if var fault = state.faults[endpoint] {
                if let remaining = fault.remaining {
                    fault.remaining = remaining - 1
                    state.faults[endpoint] = remaining <= 1 ? nil : fault
                }
                return (false, fault)
            }
            guard var fault = state.everywhere else { return (false, nil) }
            if let remaining = fault.remaining {
                fault.remaining = remaining - 1
                state.everywhere = remaining <= 1 ? nil : fault
            }
            return (false, fault)
        }
    }
}

/// Applies the injected faults around every endpoint but the admin one.
struct FaultMiddleware: RouterMiddleware {
    typealias Context = ProviderContext
    let faults: DevProviderFaults
    /// The realm of the journey endpoints and of the realm issuer.
    let realm: String

    func handle(
        _ request: Request, context: ProviderContext,
        next: (Request, ProviderContext) async throws -> Response
    ) async throws -> Response {
        guard let endpoint = DevProviderEndpoint(path: request.uri.path, query: request.uri.query, realm: realm) else {
            return try await next(request, context)
        }
        faults.serving(endpoint, started: true)
        defer { faults.serving(endpoint, started: false) }
        let (offline, fault) = faults.take(endpoint)
        if offline { throw dropped(context) }
        guard let fault else { return try await next(request, context) }
        if let latency = fault.latencyMilliseconds, latency > 0 {
            try await Task.sleep(for: .milliseconds(latency))
        }
        if fault.dropConnection == true { throw dropped(context) }
        if let status = fault.status {
            // A server in trouble answers as an OAuth server would; any other status comes as the
            // HTML page of what stands in the way (a firewall, a captive portal, a proxy).
            var response =
                status >= 500 || status == 429
                ? Reply.json(
                    ["error": "temporarily_unavailable", "error_description": "Injected fault: status \(status)."],
                    status: HTTPResponse.Status(code: status))
                : Reply.html("<h1>Injected fault: status \(status)</h1>", status: HTTPResponse.Status(code: status))
            if let retryAfter = fault.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            if let challenge = fault.wwwAuthenticate { response.headers[.wwwAuthenticate] = challenge }
            return response
        }
        if fault.echoesRequest == true {
            let body = String(buffer: try await request.body.collect(upTo: 65_536))
            return Reply.json(["error": body, "error_description": body], status: .badRequest)
        }
        var response = try await next(request, context)
        if fault.malformedBody == true {
            response.body = ResponseBody(byteBuffer: ByteBuffer(string: #"{"access_token": "trunc"#))
            response.status = .ok
            response.headers[.contentType] = "application/json"
        } else if let bytes = fault.oversizedBodyBytes {
            var buffer = ByteBuffer(string: #"{"padding":""#)
            buffer.writeRepeatingByte(UInt8(ascii: "a"), count: max(0, bytes - 14))
            buffer.writeString(#""}"#)
            response.body = ResponseBody(byteBuffer: buffer)
            response.status = .ok
            response.headers[.contentType] = "application/json"
        } else if let fields = fault.replacedFields {
            response.body = try await Self.replacing(fields, in: response.body)
        } else if let gap = fault.trickleMilliseconds {
            response.body = try await Self.trickled(response.body, every: .milliseconds(gap))
        }
        if let delay = fault.answerDelayMilliseconds, delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        return response
    }

    /// A JSON object `body` with `fields` (each value JSON text) put in; any other body as it was.
    private static func replacing(_ fields: [String: String], in body: ResponseBody) async throws -> ResponseBody {
        let collector = BodyCollector()
        try await body.write(collector)
        guard var object = try? JSONSerialization.jsonObject(with: Data(collector.bytes)) as? [String: Any] else {
            return ResponseBody(byteBuffer: ByteBuffer(bytes: collector.bytes))
        }
        for (name, json) in fields {
            object[name] = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
        }
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data(collector.bytes)
        return ResponseBody(byteBuffer: ByteBuffer(bytes: data))
    }

    /// `body`, sent a byte at a time, `gap` apart.
    private static func trickled(_ body: ResponseBody, every gap: Duration) async throws -> ResponseBody {
        let collector = BodyCollector()
        try await body.write(collector)
        let bytes = collector.bytes
        return ResponseBody(contentLength: bytes.count) { writer in
            for byte in bytes {
                try await Task.sleep(for: gap)
                try await writer.write(ByteBuffer(bytes: [byte]))
            }
            try await writer.finish(nil)
        }
    }

    private func dropped(_ context: ProviderContext) -> any Error {
        context.channel.close(mode: .all, promise: nil)
        return ConnectionDropped()
    }
}

struct ConnectionDropped: Error {}

/// Collects a response body's bytes.
private final class BodyCollector: ResponseBodyWriter, Sendable {
    private let collected = NIOLockedValueBox<[UInt8]>([])

    var bytes: [UInt8] { collected.withLockedValue { $0 } }

    func write(_ buffer: ByteBuffer) async throws { collected.withLockedValue { $0 += buffer.readableBytesView } }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
