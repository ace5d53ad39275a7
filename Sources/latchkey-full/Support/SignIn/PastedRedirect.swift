import Foundation
import Latchkey
import LatchkeyCommandLine
import NIOPosix

/// `login --browser --paste`: a sign-in through a browser on any machine, with no port bound
/// here. The provider sends the browser to a loopback address where nothing listens; the browser
/// shows an error page there, and the user copies its whole address and pastes it on this
/// command's standard input (a terminal, or a pipe from the program that runs it). The library
/// then checks it as it checks a redirect a listener received — `state`, `iss` (RFC 9207), then
/// the code is redeemed with the PKCE verifier — so a pasted URL is trusted no more than a
/// received one.
struct PastedRedirect: LoopbackRedirectListener {
    /// The most a pasted URL may hold: a redirect's code, state and issuer fit many times over.
    static let limit = 16 << 10

    /// The redirect URI sent: `http://127.0.0.1/callback`, with the port asked for, if any.
    let redirectURI: URL

    init(port: Int) {
        redirectURI =
            URL(string: "http://127.0.0.1\(port == 0 ? "" : ":\(port)")/callback")
            ?? PingJourneyConfiguration.defaultRedirectURI
    }

    func start() async throws(ProviderError) -> any LoopbackRedirectSession { Session(redirectURI: redirectURI) }

    /// The sign-in's one paste.
    struct Session: LoopbackRedirectSession {
        let redirectURI: URL

        func callback(state: String, timeout: Duration) async throws(ProviderError) -> URL {
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            let read: PastedLine
            do {
                read = try await NIOThreadPool.singleton.runIfActive {
                    PastedLine.read(from: STDIN_FILENO, limit: PastedRedirect.limit, seconds: seconds)
                }
            } catch {
                throw ProviderError(.cancelled, endpoint: .authorization, reason: "The sign-in was cancelled.")
            }
            switch read {
            case .line(let text): return try PastedRedirect.check(text, redirectURI: redirectURI)
            case .timedOut:
                throw ProviderError(
                    .timedOut, endpoint: .authorization, reason: "Nothing was pasted in time; nothing was signed in.")
            case .ended:
                throw ProviderError(
                    .invalidArgument, endpoint: .authorization,
                    reason: "Standard input ended before a URL was pasted; nothing was signed in.")
            case .tooLong:
                throw ProviderError(
                    .invalidArgument, endpoint: .authorization,
                    reason:
                        "The pasted text is longer than \(PastedRedirect.limit / 1024) KiB, so it is no redirect URL; nothing was signed in."
                )
            }
        }

        func close() async {}
    }

    /// `text` as the redirect URL of `redirectURI` (scheme, host, port and path alike), or an
    /// ``ProviderError/Code/invalidArgument`` error saying what it is instead. What the URL
    /// carries is checked by the library.
    static func check(_ text: String, redirectURI: URL) throws(ProviderError) -> URL {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw ProviderError(.invalidArgument, endpoint: .authorization, reason: "Nothing was pasted.")
        }
        guard let url = URL(string: trimmed), let host = url.host, url.scheme == "http" || url.scheme == "https"
        else {
            throw ProviderError(
                .invalidArgument, endpoint: .authorization,
                reason: "What was pasted is not a URL; paste the whole address the browser was sent to.")
        }
        guard url.scheme == redirectURI.scheme, host.lowercased() == redirectURI.host, url.port == redirectURI.port,
            url.path == redirectURI.path
        else {
            throw ProviderError(
                .invalidArgument, endpoint: .authorization,
                reason:
                    "The pasted URL is not this sign-in's redirect (\(redirectURI.absoluteString)?…); paste the address the browser was sent to after signing in."
            )
        }
        return url
    }
}

/// What reading one pasted line gave.
enum PastedLine: Sendable {
    case line(String)
    case timedOut
    case ended
    case tooLong

    /// Reads one line from `descriptor` (blocking: run it on a thread pool), waiting at most
    /// `seconds` in all and reading at most `limit` bytes.
    static func read(from descriptor: Int32, limit: Int, seconds: Double) -> PastedLine {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return .timedOut }
            var polled = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&polled, 1, Int32(min(left, 3_600) * 1_000))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return .timedOut }
            let count = chunk.withUnsafeMutableBytes { readBytes(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                return bytes.isEmpty ? .ended : .line(String(decoding: bytes, as: UTF8.self))
            }
            bytes += chunk[..<count]
            if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                return newline > limit ? .tooLong : .line(String(decoding: bytes[..<newline], as: UTF8.self))
            }
            if bytes.count > limit { return .tooLong }
        }
    }
}

/// `read(2)`, named apart from ``PastedLine/read(from:limit:seconds:)``.
private func readBytes(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
