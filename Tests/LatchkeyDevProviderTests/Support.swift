import AsyncHTTPClient
import Crypto
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// An HTTP client that never follows redirects, so tests see exactly what the provider sent.
let http: HTTPClient = {
    var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
    // Tests send dozens of requests at once; on a loaded machine they must not queue for a connection.
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
    configuration.timeout = .init(connect: .seconds(30), read: .seconds(Int64(60 * TestTiming.slowdown)))
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}()

/// What came back from the provider.
struct Answer: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: Data

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    subscript(_ key: String) -> String? { json[key] as? String }

    func header(_ name: String) -> String? { headers.first(name: name) }

    /// The query parameters of the `Location` header.
    var locationQuery: [String: String] {
        guard let location = header("Location"), let components = URLComponents(string: location) else { return [:] }
        return Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }
}

/// Requests against one provider.
struct Client: Sendable {
    let provider: DevProvider
    static let publicID = "latchkey-cli"
    static let confidentialID = "latchkey-confidential"
    static let secret = "latchkey-confidential-secret"

    func url(_ endpoint: DevProviderEndpoint) -> String { provider.url(endpoint).absoluteString }

    func get(_ url: String, headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return try await execute(request)
    }

    func post(_ url: String, form: [(String, String)], headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: Self.encode(form)))
        return try await execute(request)
    }

    func post(_ endpoint: DevProviderEndpoint, _ form: [(String, String)], headers: [(String, String)] = [])
        async throws -> Answer
    {
        try await post(url(endpoint), form: form, headers: headers)
    }

    /// Sends `request`; one to `/admin` carries the run's admin token unless it has an
    /// `Authorization` of its own (`admin: false` sends none, to test the guard).
    func execute(_ request: HTTPClientRequest, admin: Bool = true) async throws -> Answer {
        var request = request
        if admin, request.url.contains("/admin"), !request.headers.contains(name: "Authorization") {
            request.headers.add(name: "Authorization", value: "Bearer \(provider.adminToken)")
        }
        let response = try await http.execute(request, timeout: .seconds(Int64(30 * TestTiming.slowdown)))
        let body = try await response.body.collect(upTo: 64 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
    }

    /// Sends `request` byte for byte over a new connection (what a client that AsyncHTTPClient
    /// would refuse to build sends) and returns the answer's status line and body.
    func raw(_ request: String) async throws -> (status: String, body: String) {
        let url = try #require(URL(string: url(.token)))
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: try #require(url.port)) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let answer = try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var answer = ""
            for try await chunk in inbound { answer += String(buffer: chunk) }
            return answer
        }
        let status = answer.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    static func encode(_ form: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return form.map {
            "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    static var basic: (String, String) {
        ("Authorization", "Basic " + Data("\(confidentialID):\(secret)".utf8).base64EncodedString())
    }

    /// A password sign-in with the public client.
    func signIn(
        _ username: String = "alice", password: String? = nil,
        scope: String = "openid profile email offline_access device_sso", client: String = publicID
    ) async throws -> Answer {
        var form = [
            ("grant_type", "password"), ("username", username), ("password", password ?? "\(username)-password"),
            ("scope", scope),
        ]
        var headers: [(String, String)] = []
        if client == Self.publicID { form.append(("client_id", client)) } else { headers.append(Self.basic) }
        return try await post(.token, form, headers: headers)
    }

    /// Introspects `token` as the confidential client; returns `active`.
    func isActive(_ token: String) async throws -> Bool {
        let answer = try await post(.introspection, [("token", token)], headers: [Self.basic])
        #expect(answer.status == 200)
        return answer.json["active"] as? Bool ?? false
    }

    func revoke(_ token: String, hint: String? = nil, client: String = publicID) async throws -> Answer {
        var form = [("token", token)]
        if let hint { form.append(("token_type_hint", hint)) }
        if client == Self.publicID { form.append(("client_id", client)) }
        return try await post(.revocation, form, headers: client == Self.publicID ? [] : [Self.basic])
    }

    func refresh(_ refreshToken: String) async throws -> Answer {
        try await post(
            .token, [("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", Self.publicID)])
    }
}

/// Runs `body` against a provider started for it on an ephemeral loopback port.
func withProvider(
    _ configuration: DevProviderConfiguration = .default,
    clock: TestClock? = nil,
    _ body: (Client) async throws -> Void
) async throws {
    let clock = clock ?? TestClock()
    let provider = try await DevProvider.start(
        configuration: configuration, signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
    do {
        try await body(Client(provider: provider))
    } catch {
        await provider.stop()
        throw error
    }
    await provider.stop()
}

/// The claims of a compact JWS, and its header.
func jwtParts(_ token: String) -> (header: [String: Any], claims: [String: Any]) {
    let parts = token.split(separator: ".").map(String.init)
    func decode(_ text: String) -> [String: Any] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }
    guard parts.count == 3 else { return ([:], [:]) }
    return (decode(parts[0]), decode(parts[1]))
}

/// A PKCE verifier and its S256 challenge (RFC 7636).
struct PKCE {
    let verifier: String
    let challenge: String

    init() {
        verifier = (0..<3).map { _ in UUID().uuidString }.joined().replacingOccurrences(of: "-", with: "")
        let digest = Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
        challenge = digest.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
