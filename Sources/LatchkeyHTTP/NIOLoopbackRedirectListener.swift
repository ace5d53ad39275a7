import Foundation
public import Latchkey
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// Receives the browser's redirect on `http://127.0.0.1:PORT/PATH` (RFC 8252 §7.3): port 0
/// (the default) picks a free one, which providers that match loopback redirect URIs on any
/// port accept; others need the registered port.
public struct NIOLoopbackRedirectListener: LoopbackRedirectListener {
    /// The port; 0 picks a free one.
    public var port: Int
    /// The path of the redirect URI.
    public var path: String
    /// The page shown in the browser once the redirect arrived.
    public var page: String
    /// Where refused requests are logged; silent by default.
    public var logger: Logger

    /// Creates a listener.
    public init(
        port: Int = 0, path: String = "/callback", page: String = "Signed in. You can close this window.",
        logger: Logger? = nil
    ) {
        self.port = port
        self.path = path
        self.page = page
        self.logger = logger ?? Logger(label: "latchkey.loopback", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    public func start() async throws(ProviderError) -> any LoopbackRedirectSession {
        let box = CallbackBox(logger: logger)
        let path = self.path
        let page = self.page
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(
                            RedirectHandler(path: path, page: page, box: box))
                    }
                }
                .bind(host: "127.0.0.1", port: port).get()
            guard let boundPort = channel.localAddress?.port,
                let uri = URL(string: "http://127.0.0.1:\(boundPort)\(path)")
            else {
                try? await channel.close()
                throw ProviderError(.unsupported, reason: "The loopback listener has no port.")
            }
            return Session(redirectURI: uri, channel: channel, box: box)
        } catch let error as ProviderError {
            throw error
        } catch {
            throw ProviderError(
                .unsupported, endpoint: .authorization,
                reason: "Cannot listen on 127.0.0.1:\(port) for the browser's redirect.")
        }
    }

    private struct Session: LoopbackRedirectSession {
        let redirectURI: URL
        let channel: any Channel
        let box: CallbackBox

        func callback(state: String, timeout: Duration) async throws(ProviderError) -> URL {
            box.expect(state: state)
            let result = await withTaskGroup(of: URL?.self) { group in
                group.addTask { await box.wait() }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                box.cancel()
                return first
            }
            guard let result else {
                if Task.isCancelled {
                    throw ProviderError(
                        .cancelled, endpoint: .authorization, reason: "Waiting for the browser was cancelled.")
                }
                throw ProviderError(
                    .timedOut, endpoint: .authorization, reason: "The browser did not come back in time.")
            }
            return result
        }

        func close() async {
            box.cancel()
            try? await channel.close()
        }
    }
}

/// Decides which redirect is the browser's (the one carrying the expected `state`) and hands it
/// to whoever waits. A redirect that arrives before the state is known waits for it.
private final class CallbackBox: Sendable {
    private struct State {
        var expected: String?
        var url: URL?
        var waiters: [CheckedContinuation<URL?, Never>] = []
        var held: [(URL, EventLoopPromise<Bool>)] = []
        var cancelled = false
    }

    private let state = NIOLockedValueBox(State())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Sets the `state` the browser's redirect carries, and settles the redirects that came early.
    func expect(state expected: String) {
        let held = state.withLockedValue { state -> [(URL, EventLoopPromise<Bool>)] in
            state.expected = expected
            defer { state.held = [] }
            return state.held
        }
        for (url, promise) in held { promise.succeed(decide(url)) }
    }

    /// Whether `url` is the browser's redirect: `promise` gets the answer once the state is known.
    func offer(_ url: URL, promise: EventLoopPromise<Bool>) {
        let known = state.withLockedValue { state -> Bool in
            if state.expected == nil && !state.cancelled {
                state.held.append((url, promise))
                return false
            }
            return true
        }
        if known { promise.succeed(decide(url)) }
    }

    private func decide(_ url: URL) -> Bool {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let carried = items.first { $0.name == "state" }?.value
        let (accepted, waiters) = state.withLockedValue { state -> (Bool, [CheckedContinuation<URL?, Never>]) in
            guard !state.cancelled, state.url == nil, let expected = state.expected, carried == expected else {
                return (false, [])
            }
            state.url = url
            defer { state.waiters = [] }
            return (true, state.waiters)
        }
        if accepted {
            for waiter in waiters { waiter.resume(returning: url) }
        } else {
            // Not logged: the query, which may carry a code.
            logger.warning("a request to the redirect listener without the sign-in's state was refused")
        }
        return accepted
    }

    func wait() async -> URL? {
        await withCheckedContinuation { continuation in
            let immediate: URL?? = state.withLockedValue { state in
                if let url = state.url { return .some(url) }
                if state.cancelled { return .some(nil) }
                state.waiters.append(continuation)
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    func cancel() {
        let (waiters, held) = state.withLockedValue {
            state -> ([CheckedContinuation<URL?, Never>], [(URL, EventLoopPromise<Bool>)]) in
            state.cancelled = true
            defer {
                state.waiters = []
                state.held = []
            }
            return (state.waiters, state.held)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        for (_, promise) in held { promise.succeed(false) }
    }
}

/// Answers requests on the redirect path: the browser's redirect gets a page that says how the
/// sign-in went; any other request gets 400 (or 404 off the path) and changes nothing.
private final class RedirectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let path: String
    let page: String
    let box: CallbackBox
    private var uri: String?

    init(path: String, page: String, box: CallbackBox) {
        self.path = path
        self.page = page
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            uri = head.uri
        case .body:
            break
        case .end:
            let uri = self.uri ?? "/"
            guard uri == path || uri.hasPrefix(path + "?"), let url = URL(string: "http://127.0.0.1\(uri)") else {
                Self.respond(context, .notFound, "Not found.")
                return
            }
            let promise = context.eventLoop.makePromise(of: Bool.self)
            let page = self.page
            let context = NIOLoopBound(context, eventLoop: context.eventLoop)
            promise.futureResult.whenSuccess { accepted in
                guard accepted else {
                    Self.respond(
                        context.value, .badRequest,
                        "This is not the sign-in this program started, so it was ignored. If you are signing in, finish it in the window the program opened."
                    )
                    return
                }
                Self.respond(context.value, .ok, Self.outcome(of: url, page: page))
            }
            box.offer(url, promise: promise)
        }
    }

    /// What the browser's page says: signed in, or why not (the provider's error, escaped).
    static func outcome(of url: URL, page: String) -> String {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        guard let error = items.first(where: { $0.name == "error" })?.value else { return page }
        let description = items.first { $0.name == "error_description" }?.value.map { ": \($0)" } ?? ""
        let text = "Sign-in failed (\(error)\(description)). You can close this window and try again."
        return String(text.unicodeScalars.filter { !$0.properties.isWhitespace || $0 == " " }.map(Character.init))
    }

    private static func respond(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ text: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
