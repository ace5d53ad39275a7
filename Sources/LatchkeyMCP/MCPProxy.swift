public import Foundation
import HTTPTypes
public import Latchkey
public import LatchkeyHTTP
public import Logging

/// Forwards an MCP client's messages to a remote MCP server over Streamable HTTP (MCP
/// 2025-06-18 and 2025-11-25, "Transports"), with a credential's token on every request.
///
/// Each message the client sends (``forward(_:)``) is POSTed to the server with the account's
/// token for ``Configuration/resource`` — and a DPoP proof when the token is bound — through
/// `Credential.send`, so a token the server rejects is refreshed once (one refresh for every
/// process sharing the store) and the message sent again. The server's answer, a JSON body or
/// an event stream, is delivered message by message as it arrives; a stream that ends before
/// its answer is resumed with `Last-Event-ID`. The proxy keeps the session id the server gives
/// (`Mcp-Session-Id`) and the protocol version `initialize` agreed on, listens on the server's
/// own stream for messages it sends unasked, and ends the session in ``finish()``.
///
/// A message is read only as far as the transport needs (its id and method); nothing of its
/// content reaches a log. A request that cannot be delivered, or whose answer cannot be had, is
/// answered with a JSON-RPC error that says why (``Configuration/explain``), never left hanging.
public actor MCPProxy {
    /// What the proxy forwards to, and how.
    public struct Configuration: Sendable {
        /// The MCP server's endpoint.
        public var endpoint: URL
        /// The resource whose token the requests carry (RFC 8707); `nil` for the account's own.
        public var resource: URL?
        /// The scopes the token is narrowed to; `nil` for all the grant has.
        public var scopes: [String]?
        /// How long one exchange may take, its answer's stream included.
        public var requestTimeout: Duration
        /// Whether to open the server's own stream (an HTTP GET) once the session starts, for
        /// messages the server sends unasked. It is not opened for tokens bound by DPoP.
        public var listensForServerMessages: Bool
        /// The message of the JSON-RPC error that answers a request which failed.
        public var explain: @Sendable (MCPProxyFailure) -> String
        /// The argument vector of the command that mends a failure, carried in the JSON-RPC
        /// error's `data` beside the message; `nil` when there is none.
        public var remedy: @Sendable (MCPProxyFailure) -> [String]?
        /// Called with every failure, as it happens.
        public var report: @Sendable (MCPProxyFailure) -> Void
        /// Signs the account in again when a request finds that only that mends it, where the
        /// client said it shows URLs (URL-mode elicitation, MCP 2025-11-25): the request waits
        /// for it and is sent once more. `nil`: the proxy signs nothing in, and the request is
        /// answered with the error (``remedy``'s command).
        public var signIn: SignIn?

        /// Creates a configuration for the server at `endpoint`.
        public init(
            endpoint: URL, resource: URL? = nil, scopes: [String]? = nil, requestTimeout: Duration = .seconds(600),
            listensForServerMessages: Bool = true,
            explain: @escaping @Sendable (MCPProxyFailure) -> String = { $0.description },
            remedy: @escaping @Sendable (MCPProxyFailure) -> [String]? = { _ in nil },
            report: @escaping @Sendable (MCPProxyFailure) -> Void = { _ in }, signIn: SignIn? = nil
        ) {
            self.endpoint = endpoint
            self.resource = resource
            self.scopes = scopes
            self.requestTimeout = requestTimeout
            self.listensForServerMessages = listensForServerMessages
            self.explain = explain
            self.remedy = remedy
            self.report = report
            self.signIn = signIn
        }
    }

    let configuration: Configuration
    let sender: any AuthorizedRequestSender
    let transport: AsyncHTTPClientTransport
    let logger: Logger
    let deliver: @Sendable (Data) async -> Void

    var sessionID: String?
    var protocolVersion: String?
    private var initializeIDs: Set<JSONValue> = []
    private var unanswered: Set<JSONValue> = []
    /// The last event id seen on each stream, by the exchange that reads it.
    var positions: [UUID: String] = [:]
    private var inFlight: [UUID: Task<Void, Never>] = [:]
    var listener: Task<Void, Never>?
    /// Why nothing more is sent: the first answer that only a new sign-in mends (the token
    /// refused after its refresh, the account signed out, a refresh the provider refused).
    /// From then on, until the proxy exits, every message is answered with it at once — no
    /// request reaches the server or the provider, however often the client asks (an MCP host
    /// that retries would otherwise storm both).
    var ended: MCPProxyFailure?
    /// Whether the client's `initialize` said it shows URLs (URL-mode elicitation).
    var showsURLs = false
    /// The proxy's own requests to the client, by id, and where their answers go.
    var elicitations: [JSONValue: AsyncStream<Bool>.Continuation] = [:]
    /// The id of the last page the client was asked to show.
    var lastElicitation: String?
    /// The proxy's one sign-in through the client, once started.
    var signInAttempt: Task<Bool, Never>?

    /// A proxy that sends with `sender`'s tokens (a ``Credential``'s, or an agent's) through
    /// `transport`, and hands each message for the client — one JSON-RPC message or batch,
    /// without line breaks — to `deliver`.
    public init(
        configuration: Configuration, sender: any AuthorizedRequestSender,
        transport: AsyncHTTPClientTransport = .shared,
        logger: Logger = Logger(label: "latchkey.mcp", factory: { _ in SwiftLogNoOpLogHandler() }),
        deliver: @escaping @Sendable (Data) async -> Void
    ) {
        self.configuration = configuration
        self.sender = sender
        self.transport = transport
        self.logger = logger
        self.deliver = deliver
    }

    /// Forwards one message of the client (one line of its standard output, without the line
    /// feed). It returns at once: messages are sent side by side, as the client sent them.
    public func forward(_ message: Data) {
        // The client's answer to the proxy's own request is the proxy's, not the server's.
        if answeredOwnRequest(JSONRPCPeek(message)) { return }
        let key = UUID()
        inFlight[key] = Task {
            await self.post(message)
            self.inFlight[key] = nil
        }
    }

    /// Waits for the messages in flight to be answered, closes the server's stream and ends the
    /// session (an HTTP DELETE): what the proxy does when its client closes its input.
    public func finish() async {
        abandonOwnRequests()
        while let task = inFlight.values.first {
            await task.value
        }
        listener?.cancel()
        await listener?.value
        guard sessionID != nil else { return }
        let request = self.request(.delete, accepting: "application/json, text/event-stream")
        _ = await exchange(request, body: nil, stream: UUID(), timeout: .seconds(5))
        sessionID = nil
    }

    /// Sends `message`; a request that fails because the account must sign in again is sent
    /// once more when a sign-in through the client mended it (`retry`).
    private func post(_ message: Data, retry: Bool = true) async {
        let peek = JSONRPCPeek(message)
        if peek.offersURLElicitation { showsURLs = true }
        logger.trace(
            "forwarding a message", metadata: ["method": "\(peek.method ?? "-")", "bytes": "\(message.count)"])
        if peek.method == "initialize" {
            // A new session: the old one's id and version must not go with it.
            (sessionID, protocolVersion) = (nil, nil)
            if let id = peek.id { initializeIDs.insert(id) }
        }
        if peek.isRequest, let id = peek.id { unanswered.insert(id) }
        let stream = UUID()
        defer { positions[stream] = nil }
        let sentSession = sessionID != nil
        let request = self.request(.post, accepting: "application/json, text/event-stream")
        switch await exchange(request, body: message, stream: stream, timeout: configuration.requestTimeout) {
        case .failure(let failure):
            if retry, peek.isRequest, await signedInAgain() { return await post(message, retry: false) }
            await fail(peek, failure)
        case .success(let answer):
            switch AnswerOutcome.of(answer, sentSession: sentSession) {
            case .accepted:
                break
            case .message(let body):
                await received(body)
            case .streamed:
                if peek.isRequest, let id = peek.id, unanswered.contains(id) {
                    await resume(stream, answering: peek)
                }
            case .failed(let code, let status, let scope, let description):
                if code == .sessionEnded { sessionID = nil }
                if retry, peek.isRequest, await signedInAgain() { return await post(message, retry: false) }
                let failure = MCPProxyFailure(
                    code, endpoint: configuration.endpoint, status: status, scope: scope, serverDescription: description
                )
                await fail(peek, failure)
            }
            if peek.method == "notifications/initialized" { await startListening() }
        }
    }

    /// Reads on from where `stream` ended (MCP "Resumability and redelivery"): a GET with its
    /// last event id, until the answer to `peek` came or the server has nothing more.
    private func resume(_ stream: UUID, answering peek: JSONRPCPeek) async {
        guard let id = peek.id else { return }
        for _ in 0..<5 {
            guard unanswered.contains(id), let position = positions[stream] else { break }
            var request = self.request(.get, accepting: "text/event-stream")
            request.headerFields[.lastEventID] = position
            guard
                case .success(let answer) = await exchange(
                    request, body: nil, stream: stream, timeout: configuration.requestTimeout),
                AnswerOutcome.of(answer, sentSession: true) == .streamed, positions[stream] != position
            else { break }
        }
        if unanswered.contains(id) {
            await fail(peek, MCPProxyFailure(.streamEnded, endpoint: configuration.endpoint))
        }
    }

    /// Sends `request` with the credential's token; an event-stream answer's messages are
    /// delivered as they arrive, and its last event id kept under `stream`.
    func exchange(_ request: HTTPRequest, body: Data?, stream: UUID, timeout: Duration) async
        -> Result<HTTPTransportResponse, MCPProxyFailure>
    {
        if let ended { return .failure(ended) }
        let result = await send(request, body: body, stream: stream, timeout: timeout)
        if ended == nil, let failure = Self.needsSignIn(result, endpoint: configuration.endpoint) { ended = failure }
        return result
    }

    /// The failure in `result` that only a new sign-in mends, if it is one.
    static func needsSignIn(_ result: Result<HTTPTransportResponse, MCPProxyFailure>, endpoint: URL)
        -> MCPProxyFailure?
    {
        switch result {
        case .failure(let failure):
            let gone = failure.code == .signedOut || failure.providerError?.requiresSignIn == true
            return gone ? failure : nil
        case .success(let answer):
            guard
                case .failed(.tokenRefused, let status, _, let description) = AnswerOutcome.of(
                    answer, sentSession: true)
            else { return nil }
            return MCPProxyFailure(.tokenRefused, endpoint: endpoint, status: status, serverDescription: description)
        }
    }

    private func send(_ request: HTTPRequest, body: Data?, stream: UUID, timeout: Duration) async
        -> Result<HTTPTransportResponse, MCPProxyFailure>
    {
        let reader = EventStreamReader(
            opened: { head in await self.keepSession(of: head) },
            event: { event in await self.received(event, on: stream) })
        do {
            let answer = try await sender.send(
                request, body: body, resource: configuration.resource, scopes: configuration.scopes,
                through: EventStreamTransport(base: transport, stream: reader),
                options: HTTPTransportOptions(timeout: timeout, maximumBodySize: 16 << 20))
            keepSession(of: answer.response)
            return .success(answer)
        } catch {
            return .failure(.noToken(error, endpoint: configuration.endpoint))
        }
    }

    /// Keeps the session id the server gave (in its answer to `initialize`).
    private func keepSession(of response: HTTPResponse) {
        guard sessionID == nil, response.status.kind == .successful,
            let id = response.headerFields[.mcpSessionID]
        else { return }
        sessionID = id
    }

    private func received(_ event: ServerSentEvent, on stream: UUID) async {
        if !event.lastEventID.isEmpty { positions[stream] = event.lastEventID }
        guard event.type == "message", !event.data.isEmpty else { return }
        await received(Data(event.data.utf8))
    }

    /// Delivers a message of the server's to the client, noting the answers it carries.
    private func received(_ message: Data) async {
        let peek = JSONRPCPeek(message)
        if peek.isResponse, let id = peek.id {
            unanswered.remove(id)
            if initializeIDs.remove(id) != nil, let version = peek.protocolVersion { protocolVersion = version }
        }
        await deliver(Self.oneLine(message))
    }

    /// Reports `failure`, and answers the request `peek` (if it is one, still unanswered) with
    /// a JSON-RPC error that says why.
    private func fail(_ peek: JSONRPCPeek, _ failure: MCPProxyFailure) async {
        logger.debug("a message was not delivered", metadata: ["failure": "\(failure.code.rawValue)"])
        configuration.report(failure)
        guard peek.isRequest, let id = peek.id, unanswered.remove(id) != nil else { return }
        await deliver(
            JSONRPCPeek.error(
                answering: id, message: configuration.explain(failure), command: configuration.remedy(failure)))
    }

    /// A request to the endpoint with the session's headers.
    func request(_ method: HTTPRequest.Method, accepting accept: String) -> HTTPRequest {
        var request = HTTPRequest(method: method, url: configuration.endpoint)
        request.headerFields[.accept] = accept
        if method == .post { request.headerFields[.contentType] = "application/json" }
        if let sessionID { request.headerFields[.mcpSessionID] = sessionID }
        if let protocolVersion { request.headerFields[.mcpProtocolVersion] = protocolVersion }
        return request
    }

    /// `message` on one line, as the stdio transport frames messages: a line break in JSON is
    /// only ever whitespace between tokens (inside a string it is escaped), so it becomes a space.
    static func oneLine(_ message: Data) -> Data {
        guard message.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return message }
        return Data(message.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 })
    }
}

extension HTTPField.Name {
    static let mcpSessionID = HTTPField.Name("Mcp-Session-Id") ?? .contentLocation
    static let mcpProtocolVersion = HTTPField.Name("MCP-Protocol-Version") ?? .contentLocation
    static let lastEventID = HTTPField.Name("Last-Event-ID") ?? .contentLocation
}
