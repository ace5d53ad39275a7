public import Foundation
public import HTTPTypes

/// Sends HTTP requests for Latchkey. Inject one into providers; `LatchkeyHTTP` has the
/// AsyncHTTPClient one (the Linux and server default), and on Apple platforms
/// ``URLSessionTransport`` is available.
///
/// Implementations must never follow redirects (token-bearing requests must not be replayed
/// to another host), must stop reading a body past ``HTTPTransportOptions/maximumBodySize``,
/// and must honour the timeout.
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response with its whole body.
    func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
        -> HTTPTransportResponse
}

/// Limits of one request.
public struct HTTPTransportOptions: Sendable, Hashable {
    /// The longest the whole exchange may take.
    public var timeout: Duration
    /// The largest response body accepted, in bytes.
    public var maximumBodySize: Int

    /// Creates options; the defaults are 30 seconds and 1 MiB.
    public init(timeout: Duration = .seconds(30), maximumBodySize: Int = 1 << 20) {
        self.timeout = timeout
        self.maximumBodySize = maximumBodySize
    }
}

/// A response and its body.
public struct HTTPTransportResponse: Sendable {
    /// Status and headers.
    public var response: HTTPResponse
    /// The body, at most the size the options allowed.
    public var body: Data

    /// Creates a response.
    public init(response: HTTPResponse, body: Data) {
        self.response = response
        self.body = body
    }
}

/// Why a request got no HTTP response.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connectionFailed, timedOut, bodyTooLarge, invalidURL, cancelled
        }

        private let base: Base

        /// The connection could not be made, or was closed before a response.
        public static let connectionFailed = Kind(base: .connectionFailed)
        /// No response within the timeout.
        public static let timedOut = Kind(base: .timedOut)
        /// The response body was larger than allowed.
        public static let bodyTooLarge = Kind(base: .bodyTooLarge)
        /// The URL is not one Latchkey will send to (malformed, or http to a non-loopback host).
        public static let invalidURL = Kind(base: .invalidURL)
        /// The task was cancelled.
        public static let cancelled = Kind(base: .cancelled)

        /// The kind's name.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var kind: Kind
    /// What happened, without secrets.
    public var reason: String
    /// The error of the underlying client, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates a transport error.
    public init(_ kind: Kind, _ reason: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String { reason }
}
