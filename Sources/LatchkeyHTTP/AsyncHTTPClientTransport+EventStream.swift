public import Foundation
public import HTTPTypes
public import Latchkey

/// What reads an event-stream answer as it arrives: its head first, then each event.
public struct EventStreamReader: Sendable {
    /// Called once with the answer's status and headers, before its first event.
    public var opened: @Sendable (HTTPResponse) async -> Void
    /// Called with each event, in order, as it arrives.
    public var event: @Sendable (ServerSentEvent) async -> Void

    /// A reader of `opened` and `event`.
    public init(
        opened: @escaping @Sendable (HTTPResponse) async -> Void = { _ in },
        event: @escaping @Sendable (ServerSentEvent) async -> Void
    ) {
        self.opened = opened
        self.event = event
    }
}

extension AsyncHTTPClientTransport {
    /// Sends `request` as ``send(_:body:options:)`` does, except that a 2xx answer whose body is
    /// an event stream (`text/event-stream`) is read as it arrives by `stream`; it is returned
    /// with an empty body once the server ends the stream. The options' timeout bounds the whole
    /// exchange, the stream included.
    public func send(
        _ request: HTTPRequest, body: Data?, options: HTTPTransportOptions, stream: EventStreamReader
    ) async throws(TransportError) -> HTTPTransportResponse {
        try await exchange(request, body: body, options: options, stream: stream)
    }

    /// Whether `response`'s body is an event stream.
    static func isEventStream(_ response: HTTPResponse) -> Bool {
        response.headerFields[.contentType]?.lowercased().hasPrefix("text/event-stream") == true
    }
}

/// An ``HTTPTransport`` whose event-stream answers are read as they arrive: what a request
/// helper that takes a transport (`Credential.send(_:body:resource:scopes:through:options:)`)
/// sends through when the answer may be a stream, such as MCP's Streamable HTTP.
public struct EventStreamTransport: HTTPTransport {
    /// The transport that sends.
    public var base: AsyncHTTPClientTransport
    /// What reads the 2xx event-stream answers.
    public var stream: EventStreamReader

    /// Sends through `base`, with `stream` reading event-stream answers.
    public init(base: AsyncHTTPClientTransport, stream: EventStreamReader) {
        self.base = base
        self.stream = stream
    }

    public func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
        -> HTTPTransportResponse
    {
        try await base.send(request, body: body, options: options, stream: stream)
    }
}
