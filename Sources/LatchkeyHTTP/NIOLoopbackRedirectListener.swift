import Foundation
public import Latchkey
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

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

    /// Creates a listener.
    public init(port: Int = 0, path: String = "/callback", page: String = "Signed in. You can close this window.") {
        self.port = port
        self.path = path
        self.page = page
    }

    public func start() async throws(ProviderError) -> any LoopbackRedirectSession {
        let box = CallbackBox()
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

        func callback(timeout: Duration) async throws(ProviderError) -> URL {
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

/// Hands the first redirect URL to whoever waits for it.
private final class CallbackBox: Sendable {
    private struct State {
        var url: URL?
        var waiters: [CheckedContinuation<URL?, Never>] = []
        var cancelled = false
    }

    private let state = Mutex(State())

    func deliver(_ url: URL) {
        let waiters = state.withLock { state -> [CheckedContinuation<URL?, Never>] in
            guard state.url == nil else { return [] }
            state.url = url
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: url) }
    }

    func wait() async -> URL? {
        await withCheckedContinuation { continuation in
            let immediate: URL?? = state.withLock { state in
                if let url = state.url { return .some(url) }
                if state.cancelled { return .some(nil) }
                state.waiters.append(continuation)
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    func cancel() {
        let waiters = state.withLock { state -> [CheckedContinuation<URL?, Never>] in
            state.cancelled = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }
}

/// Answers requests on the redirect path with a short page, and reports the URL.
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
            let matches = uri == path || uri.hasPrefix(path + "?")
            let text = matches ? page : "Not found."
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            headers.add(name: "Connection", value: "close")
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: .http1_1, status: matches ? .ok : .notFound, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            if matches, let url = URL(string: "http://127.0.0.1\(uri)") { box.deliver(url) }
        }
    }
}
