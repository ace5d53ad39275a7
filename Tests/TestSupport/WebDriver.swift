import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Headless Chromium, driven through chromedriver over the W3C WebDriver HTTP API
/// (https://www.w3.org/TR/webdriver2/): just the commands a sign-in needs.
public struct WebDriver: Sendable {
    /// Whether Debian's `chromium` and `chromium-driver` are installed.
    public static var isAvailable: Bool { chromium != nil && chromedriver != nil }

    static var chromium: String? { executable(["chromium", "chromium-browser", "google-chrome"]) }
    static var chromedriver: String? { executable(["chromedriver"]) }

    private static func executable(_ names: [String]) -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        for name in names {
            for folder in folders where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
                return "\(folder)/\(name)"
            }
        }
        return nil
    }

    let process: ChildProcess
    let base: String

    /// Starts chromedriver on a free loopback port.
    public static func start() async throws -> WebDriver {
        let driver = try #require(chromedriver, "chromedriver is not installed: run scripts/install-deps")
        let process = try await ChildProcess.start(URL(fileURLWithPath: driver), ["--port=0"], input: "")
        // The whole line: a pipe can hand over "…on port 371" before the rest of the number.
        let banner = try await process.standardOutput {
            $0.components(separatedBy: "started successfully on port ").last?.contains("\n") == true
                && $0.contains("started successfully on port ")
        }
        let port = try #require(
            banner.components(separatedBy: "started successfully on port ").last?.prefix { $0.isNumber },
            "chromedriver did not start: \(banner)")
        return WebDriver(process: process, base: "http://127.0.0.1:\(port)")
    }

    public func stop() async {
        process.send(signal: SIGTERM)
        _ = try? await process.finish()
    }

    /// A new headless browser.
    public func session() async throws -> Session {
        let binary = try #require(Self.chromium, "chromium is not installed: run scripts/install-deps")
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": binary,
                        // Root has no sandbox; /dev/shm is small in containers.
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
                    ],
                ]
            ]
        ]
        let value = try await Self.call(base, .POST, "/session", capabilities)
        let id = try #require((value as? [String: Any])?["sessionId"] as? String, "no session: \(value)")
        return Session(base: "\(base)/session/\(id)")
    }

    /// One browser window.
    public struct Session: Sendable {
        let base: String

        public func navigate(to url: String) async throws { _ = try await call(.POST, "/url", ["url": url]) }

        public func currentURL() async throws -> String { try await call(.GET, "/url") as? String ?? "" }

        /// The element `selector` (CSS) matches, waited for up to `timeout`.
        public func element(_ selector: String, timeout: Duration = .seconds(20)) async throws -> String {
            try await waitFor("the element \(selector)", timeout: timeout) {
                let found = try? await call(.POST, "/element", ["using": "css selector", "value": selector])
                return (found as? [String: Any])?.values.first as? String
            }
        }

        public func type(_ text: String, into selector: String) async throws {
            let element = try await element(selector)
            _ = try await call(.POST, "/element/\(element)/value", ["text": text])
        }

        public func click(_ selector: String) async throws {
            let element = try await element(selector)
            _ = try await call(.POST, "/element/\(element)/click", [:])
        }

        /// The page's visible text.
        public func text() async throws -> String {
            let body = try await element("body")
            return try await call(.GET, "/element/\(body)/text") as? String ?? ""
        }

        /// The cookies the browser holds for the current page's host, by name.
        public func cookies() async throws -> [String: String] {
            let list = try await call(.GET, "/cookie") as? [[String: Any]] ?? []
            var cookies: [String: String] = [:]
            for cookie in list {
                if let name = cookie["name"] as? String, let value = cookie["value"] as? String {
                    cookies[name] = value
                }
            }
            return cookies
        }

        /// A PNG of the window.
        public func screenshot() async throws -> Data {
            let encoded = try await call(.GET, "/screenshot") as? String ?? ""
            return try #require(Data(base64Encoded: encoded), "the screenshot is not base64")
        }

        public func close() async { _ = try? await call(.DELETE, "") }

        /// Polls `probe` until it gives a value, for up to `timeout`.
        public func waitFor<T>(_ what: String, timeout: Duration, _ probe: () async throws -> T?) async throws -> T {
            let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
            while true {
                if let value = try await probe() { return value }
                guard ContinuousClock.now < deadline else {
                    throw WebDriverError(message: "timed out waiting for \(what) at \(try await currentURL())")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        private func call(_ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil) async throws -> Any {
            try await WebDriver.call(base, method, path, body)
        }
    }

    public struct WebDriverError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// One WebDriver command: JSON in, the answer's `value` out; a WebDriver error throws.
    static func call(_ base: String, _ method: HTTPMethod, _ path: String, _ body: [String: Any]?) async throws -> Any {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let data = Data(try await response.body.collect(upTo: 64 << 20).readableBytesView)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let value = object?["value"] ?? NSNull()
        guard response.status.code < 300 else {
            let error = (value as? [String: Any])?["message"] as? String ?? "\(response.status)"
            throw WebDriverError(message: "WebDriver \(method) \(path): \(error.prefix(300))")
        }
        return value
    }
}
