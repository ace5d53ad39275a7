import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A browser of sorts for web-app tests without Chromium: a cookie jar (by name: the apps and
/// providers of a test all live on 127.0.0.1), redirects followed by hand, forms posted.
public actor TestBrowser {
    /// One answer.
    public struct Page: Sendable {
        public var url: URL
        public var status: Int
        public var body: String
        public var headers: [(String, String)]
        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// A client that never follows redirects: the browser does, keeping cookies on the way.
    /// Many connections per host, and time to get one: tests send a hundred requests at once on a
    /// loaded machine. Each request's own deadline (`send`) is the limit; the connect and read
    /// timeouts, stretched as it is, never end a request before it (unstretched, a 60-second read
    /// timeout ended one of a hundred sign-ins at once under the thread sanitizer).
    static let client = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(
                connect: .seconds(Int64(60 * TestTiming.slowdown)), read: .seconds(Int64(60 * TestTiming.slowdown))),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 128)))

    public private(set) var cookies: [String: String] = [:]

    public init() {}

    /// Sets a cookie by hand (to replay another browser's, say).
    public func setCookie(_ name: String, _ value: String?) { cookies[name] = value }

    /// GETs `url`, following up to ten redirects.
    public func open(_ url: URL) async throws -> Page {
        try await follow(try await send(url, method: "GET", form: nil))
    }

    /// POSTs `form` to `url`, following the redirects that answer it.
    public func submit(_ url: URL, _ form: [String: String], follow following: Bool = true) async throws -> Page {
        let page = try await send(url, method: "POST", form: form)
        return following ? try await follow(page) : page
    }

    /// Sends one request; no redirect is followed.
    public func send(_ url: URL, method: String, form: [String: String]?, headers extra: [String: String] = [:])
        async throws -> Page
    {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        let cookieHeader = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
        if !cookieHeader.isEmpty { request.headers.add(name: "Cookie", value: cookieHeader) }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let form {
            var components = URLComponents()
            components.queryItems = form.map { URLQueryItem(name: $0.key, value: $0.value) }
            let body = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await Self.client.execute(
            request, timeout: TimeAmount.seconds(Int64(30 * TestTiming.slowdown)))
        let body = try await response.body.collect(upTo: 4 << 20)
        for value in response.headers["Set-Cookie"] {
            let pair = value.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            guard let name = pair.first.map(String.init) else { continue }
            let cookieValue = pair.count > 1 ? String(pair[1]) : ""
            let expired = value.lowercased().contains("max-age=0")
            cookies[name] = expired || cookieValue.isEmpty ? nil : cookieValue
        }
        return Page(
            url: url, status: Int(response.status.code), body: String(buffer: body),
            headers: response.headers.map { ($0.name, $0.value) })
    }

    private func follow(_ page: Page) async throws -> Page {
        var page = page
        for _ in 0..<10 {
            guard (300..<400).contains(page.status), let location = page.header("Location"),
                let next = URL(string: location, relativeTo: page.url)?.absoluteURL
            else { return page }
            page = try await send(next, method: "GET", form: nil)
        }
        return page
    }

    /// Signs in at the development provider's form the page shows (its query holds the
    /// authorization request), and follows the redirects back to the app.
    public func signInAtDevProvider(_ form: Page, username: String, password: String) async throws -> Page {
        var fields: [String: String] = [:]
        for item in URLComponents(url: form.url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
            fields[item.name] = item.value
        }
        fields["username"] = username
        fields["password"] = password
        return try await submit(form.url, fields)
    }
}
