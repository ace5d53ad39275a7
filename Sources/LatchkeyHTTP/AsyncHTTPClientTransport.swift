public import AsyncHTTPClient
public import Foundation
public import HTTPTypes
public import Latchkey
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// ``HTTPTransport`` over AsyncHTTPClient: Latchkey's default on Linux and servers.
///
/// Redirects are never followed, bodies are read up to the request's size cap, and each
/// request has its own deadline.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// The client: the caller's, or this transport's own, made at the first request, so that a
    /// program that sends none (`latchkey token` with a valid token) starts no event loop.
    private let made: NIOLockedValueBox<HTTPClient?>
    /// The configuration of the client of its own; `nil` with the caller's.
    private let configuration: HTTPClient.Configuration?
    private let ownsClient: Bool

    /// Uses an HTTP client of its own (redirects off), made at the first request and shut down
    /// by ``shutdown()``.
    ///
    /// - Parameter idleTimeout: how long a connection is kept for the next request. A server
    ///   closes its idle connections too (uvicorn and Node.js after 5 s): a request sent on one it
    ///   is closing fails, so a client that talks to such servers between pauses keeps its own
    ///   shorter than theirs.
    public init(idleTimeout: Duration = .seconds(60)) {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        // Signing many accounts out means many revocations to one host at once.
        let (seconds, attoseconds) = idleTimeout.components
        configuration.connectionPool = .init(
            idleTimeout: .milliseconds(max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)),
            concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        // A refused connection is an answer: report it now (it is retryable, and the outbox
        // retries revocations) instead of retrying until the request's deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // No spans of the client's own: they record the whole URL, and an end-session request's
        // query holds the ID token. Latchkey's own span of each request leaves the URL out.
        configuration.tracing.tracer = nil
        self.configuration = configuration
        made = NIOLockedValueBox(nil)
        ownsClient = true
    }

    /// Uses `client`, which the caller owns. It must not follow redirects, and its own tracing
    /// should be off (`configuration.tracing.tracer = nil`): AsyncHTTPClient's spans record the
    /// whole URL, and an end-session request's query holds the ID token. Latchkey traces each
    /// request itself, without the URL.
    public init(client: HTTPClient) {
        configuration = nil
        made = NIOLockedValueBox(client)
        ownsClient = false
    }

    /// The client, made now if this is the first request.
    private var client: HTTPClient {
        made.withLockedValue { made in
            if let client = made { return client }
            // Only the transport's own client is made here: a caller's was given at init.
            let client = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: configuration ?? HTTPClient.Configuration(redirectConfiguration: .disallow))
            made = client
            return client
        }
    }

    /// Shuts the transport's own client down, if it was made (a client passed in is left alone).
    public func shutdown() async throws {
        guard ownsClient, let client = made.withLockedValue({ $0 }) else { return }
        try await client.shutdown()
    }

    /// A process-wide transport that is never shut down, for command-line tools.
    public static let shared = AsyncHTTPClientTransport()

    public func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
        -> HTTPTransportResponse
    {
        try await exchange(request, body: body, options: options, stream: nil)
    }

    /// Sends `request`; with a reader of `stream`, a 2xx answer that is an event stream is read
    /// event by event into it, and returned with an empty body once the stream ends.
    func exchange(
        _ request: HTTPRequest, body: Data?, options: HTTPTransportOptions, stream: EventStreamReader?
    ) async throws(TransportError) -> HTTPTransportResponse {
        guard let url = request.url else { throw TransportError(.invalidURL, "The request has no URL.") }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields { outgoing.headers.add(name: field.name.rawName, value: field.value) }
        if let body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        // Saturating: a timeout of years must not overflow nanoseconds.
        let (seconds, attoseconds) = options.timeout.components
        let (whole, overflow) = max(seconds, 0).multipliedReportingOverflow(by: 1_000_000_000)
        let deadline = NIODeadline.now() + .nanoseconds(overflow ? Int64.max / 2 : whole + attoseconds / 1_000_000_000)
        do {
            // The timer below is the request's only deadline, head and body alike (a body that
            // trickles in cannot outlast it): it ends the request by cancelling it. AsyncHTTPClient
            // gets none of its own, since its deadline is a point in time too: in a process stopped
            // past it, it fired at the resumption, before the answer already in the socket was
            // read, and the rotated refresh token in that answer was lost (see `TimeoutTimer`).
            let request = outgoing
            return try await withThrowingTaskGroup(of: HTTPTransportResponse?.self) { group in
                group.addTask { [client] in
                    let response = try await client.execute(request, deadline: .distantFuture)
                    var fields = HTTPFields()
                    for header in response.headers {
                        if let name = HTTPField.Name(header.name) {
                            fields.append(HTTPField(name: name, value: header.value))
                        }
                    }
                    let head = HTTPResponse(
                        status: HTTPResponse.Status(code: Int(response.status.code)), headerFields: fields)
                    if let stream, head.status.kind == .successful, Self.isEventStream(head) {
                        await stream.opened(head)
                        var parser = ServerSentEventParser(limit: options.maximumBodySize)
                        for try await piece in response.body {
                            for event in parser.consume(piece.readableBytesView) { await stream.event(event) }
                            if parser.isOverLimit {
                                throw TransportError(
                                    .bodyTooLarge,
                                    "An event of the stream is larger than \(options.maximumBodySize) bytes.",
                                    underlying: nil)
                            }
                        }
                        return HTTPTransportResponse(response: head, body: Data())
                    }
                    let bytes = try await response.body.collect(upTo: options.maximumBodySize)
                    return HTTPTransportResponse(response: head, body: Data(bytes.readableBytesView))
                }
                group.addTask {
                    try await TimeoutTimer.sleep(until: deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard case .some(let answer?) = try await group.next() else {
                    throw TransportError(
                        .timedOut, "No answer from \(url.host ?? "the server") in time.", underlying: nil)
                }
                return answer
            }
        } catch let error as NIOTooManyBytesError {
            throw TransportError(
                .bodyTooLarge, "The response body is larger than \(options.maximumBodySize) bytes.", underlying: error)
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                throw TransportError(
                    .timedOut, "No answer from \(url.host ?? "the server") in time.", underlying: error)
            }
            if error == .cancelled { throw TransportError(.cancelled, "The request was cancelled.", underlying: error) }
            throw TransportError(
                .connectionFailed, "The connection to \(url.host ?? "the server") failed.", underlying: error)
        } catch let error as TransportError {
            throw error
        } catch is CancellationError {
            throw TransportError(.cancelled, "The request was cancelled.")
        } catch {
            throw TransportError(.connectionFailed, "The connection to \(url.host ?? "the server") failed.")
        }
    }
}

/// The timer that ends a request at its deadline, unless the process was stopped past it.
///
/// A process stopped (Ctrl-Z, `SIGSTOP`, a suspended machine) while its request was in flight
/// resumes with the timer overdue and, often, the answer already in the socket: the provider
/// acted on the request (rotated a refresh token) and answered while the process could not read.
/// Ending the request then would lose that answer. A timer that wakes much later than it was set
/// for therefore waits a moment more, once, so that an answer already received is read first.
enum TimeoutTimer {
    /// How late a timer may wake before its process is taken to have been stopped: well above
    /// a busy machine's scheduling delay, well below a Ctrl-Z.
    static let lateness = TimeAmount.milliseconds(100)
    /// How long an answer that arrived while the process was stopped gets to be read: spent only
    /// by a process that was stopped, and long enough for one that resumes on a loaded machine.
    static let grace = TimeAmount.seconds(2)

    /// Sleeps until `deadline`, and `grace` more when it woke more than `lateness` after it.
    static func sleep(until deadline: NIODeadline) async throws {
        try await Task.sleep(for: .nanoseconds(max(0, (deadline - NIODeadline.now()).nanoseconds)))
        guard NIODeadline.now() - deadline > lateness else { return }
        try await Task.sleep(for: .nanoseconds(grace.nanoseconds))
    }
}
