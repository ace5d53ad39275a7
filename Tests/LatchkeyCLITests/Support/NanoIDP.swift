import AsyncHTTPClient
import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// nanoidp (PyPI, installed by `scripts/install-deps`): a real OAuth 2.0 / OpenID provider with
/// dynamic registration, the device grant with a form a test can submit, rotating refresh tokens
/// whose reuse revokes the whole family, and an audit API.
///
/// Each test starts its own on a free loopback port, under libfaketime (Debian's `libfaketime`):
/// ``shiftClock(to:)`` moves the provider's clock and nothing else's. Access tokens live one
/// minute unless a test asks for longer; `alice` signs in with `alice-password`, and the client
/// `resource-server` (secret `resource-server-secret`) is what an MCP server introspects with.
struct NanoIDP {
    let process: ChildProcess
    let issuer: URL
    let folder: TemporaryFolder

    /// libfaketime's library, wherever the machine's multiarch layout put it.
    static let libfaketime: String? = {
        let lib = "/usr/lib"
        let triples = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return (triples.map { "\(lib)/\($0)/faketime/libfaketime.so.1" } + ["\(lib)/faketime/libfaketime.so.1"])
            .first { FileManager.default.fileExists(atPath: $0) }
    }()

    /// Whether nanoidp and libfaketime are installed: asked once, when the suites are planned.
    static let isAvailable = libfaketime != nil && Scripts.pythonCanImport("nanoidp")

    /// Where nanoidp may fetch client metadata documents: `host` (`127.0.0.1:PORT`), over TLS,
    /// trusting the certificate at `authority` and nothing else.
    struct DocumentHost {
        var host: String
        var authority: String
    }

    /// Starts a nanoidp whose access tokens live `accessTokenMinutes` and whose refresh tokens
    /// live `refreshTokenMinutes` and rotate on every use; with `documents`, it fetches client
    /// metadata documents from that host alone.
    static func start(accessTokenMinutes: Int = 1, refreshTokenMinutes: Int = 10080, documents: DocumentHost? = nil)
        async throws -> NanoIDP
    {
        let libfaketime = try #require(libfaketime, "libfaketime is not installed (scripts/install-deps)")
        let folder = try TemporaryFolder()
        let port = try await FreePort.pick()
        let issuer = "http://127.0.0.1:\(port)"
        let documentSettings = documents.map {
            #"  client_id_metadata_documents: {enabled: true, allowed_hosts: ["\#($0.host)"], allow_loopback: true}"#
        }
        let settings = """
            config_version: 1
            server:
              host: "127.0.0.1"
              port: \(port)
            oauth:
              issuer: "\(issuer)"
              audience: "latchkey-tests"
              token_expiry_minutes: \(accessTokenMinutes)
              refresh_token_expiry_minutes: \(refreshTokenMinutes)
              refresh_token_rotation: true
              dynamic_registration:
                enabled: true
            \(documentSettings ?? "")
              clients:
                - client_id: "resource-server"
                  client_secret: "resource-server-secret"
            device_flow:
              polling_interval: 1
            logging:
              level: "WARNING"
            jwt:
              keys_dir: "\(folder.file("keys"))"

            """
        let users = """
            config_version: 1
            users:
              alice:
                password: "alice-password"
                email: "alice@example.com"

            """
        try Data(settings.utf8).write(to: URL(fileURLWithPath: folder.file("settings.yaml")))
        try Data(users.utf8).write(to: URL(fileURLWithPath: folder.file("users.yaml")))
        try Data("+0\n".utf8).write(to: URL(fileURLWithPath: folder.file("clock")))
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = libfaketime
        environment["FAKETIME_TIMESTAMP_FILE"] = folder.file("clock")
        environment["FAKETIME_NO_CACHE"] = "1"
        if let documents { environment["SSL_CERT_FILE"] = documents.authority }
        let process = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-m", "nanoidp", "--config", folder.path, "--port", "\(port)"], environment: environment)
        let provider = NanoIDP(process: process, issuer: try #require(URL(string: issuer)), folder: folder)
        try await provider.waitUntilServing()
        return provider
    }

    private func waitUntilServing() async throws {
        let discovery = issuer.absoluteString + "/.well-known/openid-configuration"
        for _ in 0..<300 {
            if let answer = try? await Self.client.execute(HTTPClientRequest(url: discovery), timeout: .seconds(2)),
                answer.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        await stop()
        Issue.record("nanoidp did not start")
        throw CancellationError()
    }

    /// Moves the provider's clock to `seconds` after (or, negative, before) the real time.
    func shiftClock(to seconds: Int) throws {
        try Data("\(seconds >= 0 ? "+" : "")\(seconds)s\n".utf8).write(to: URL(fileURLWithPath: folder.file("clock")))
    }

    /// One HTTP client for every test, following no redirect: a sign-in's redirect is the answer.
    static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    private func post(_ url: String, form: [String: String]) async throws -> HTTPClientResponse {
        var body = URLComponents()
        body.queryItems = form.map { URLQueryItem(name: $0.key, value: $0.value) }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: body.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""))
        return try await Self.client.execute(request, timeout: .seconds(10))
    }

    /// Plays the user at the device verification page: enters `code` and signs in as alice.
    func approveDevice(code: String) async throws {
        let answer = try await post(
            issuer.absoluteString + "/device",
            form: ["user_code": code, "username": "alice", "password": "alice-password", "action": "authorize"])
        let page = String(buffer: try await answer.body.collect(upTo: 1 << 20))
        #expect(answer.status == .ok && page.contains("authorized"), "the device form did not approve the code")
    }

    /// Plays the browser at `authorizationURL`: signs in as alice and returns where nanoidp sends
    /// the browser (not followed).
    func signIn(at authorizationURL: String) async throws -> String {
        let answer = try await post(authorizationURL, form: ["username": "alice", "password": "alice-password"])
        return try #require(answer.headers.first(name: "Location"), "nanoidp did not redirect: \(answer.status)")
    }

    /// Plays the browser at `authorizationURL` through to the end: signs in as alice and
    /// follows the redirect to the command's loopback listener.
    func playBrowser(at authorizationURL: String) async throws {
        let location = try await signIn(at: authorizationURL)
        #expect(location.hasPrefix("http://127.0.0.1:"), "\(location)")
        let callback = try await Self.client.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
        #expect(callback.status == .ok)
    }

    /// One entry of nanoidp's audit log.
    struct AuditEntry {
        var event: String
        var status: String
        var details: [String: Any]
        var grantType: String? { details["grant_type"] as? String }
    }

    /// The audit log, oldest first.
    func audit() async throws -> [AuditEntry] {
        let answer = try await Self.client.execute(
            HTTPClientRequest(url: issuer.absoluteString + "/api/audit?limit=10000"), timeout: .seconds(10))
        let body = try await answer.body.collect(upTo: 1 << 24)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        let entries = object?["entries"] as? [[String: Any]] ?? []
        return entries.reversed().map {
            AuditEntry(
                event: $0["event_type"] as? String ?? "", status: $0["status"] as? String ?? "",
                details: $0["details"] as? [String: Any] ?? [:])
        }
    }

    /// How many token requests of `grantType` the provider answered with `status`.
    func tokenRequests(_ grantType: String, status: String = "success") async throws -> Int {
        try await audit().filter { $0.event == "token_request" && $0.grantType == grantType && $0.status == status }
            .count
    }

    /// How many introspections the provider answered: one per request an MCP server got with a
    /// token.
    func introspections() async throws -> Int {
        try await audit().filter { $0.event == "introspection_request" }.count
    }

    func stop() async {
        process.send(signal: SIGTERM)
        _ = try? await process.finish()
        folder.cleanUp()
    }
}
