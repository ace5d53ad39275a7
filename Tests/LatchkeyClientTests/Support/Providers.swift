import AsyncHTTPClient
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

/// The transport every client test uses (learning the tokens it carries in the trace pass).
let transport = TraceLog.watching(AsyncHTTPClientTransport.shared)

/// Whether a suite whose outside provider is missing must fail instead of being skipped
/// (the README's test command and CI set it).
let providersRequired = ProcessInfo.processInfo.environment["LATCHKEY_REQUIRE_PROVIDERS"] == "1"

/// The Glewlwyd instance `scripts/providers/glewlwyd start` left running, if any.
enum Glewlwyd {
    struct Environment: Decodable, Sendable {
        var issuer: String
        var baseURL: String
        var loginAPI: String
        var confidentialClientID: String
        var publicClientID: String
        var clientSecret: String
        var pid: Int32

        enum CodingKeys: String, CodingKey {
            case issuer, pid
            case baseURL = "base_url"
            case loginAPI = "login_api"
            case confidentialClientID = "confidential_client_id"
            case publicClientID = "public_client_id"
            case clientSecret = "client_secret"
        }
    }

    static var environmentFile: URL {
        if let path = ProcessInfo.processInfo.environment["LATCHKEY_GLEWLWYD_ENV"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".providers/glewlwyd/env.json")
    }

    /// The running instance's settings, or nil when none runs.
    static var environment: Environment? {
        guard let data = try? Data(contentsOf: environmentFile),
            let environment = try? JSONDecoder().decode(Environment.self, from: data),
            kill(environment.pid, 0) == 0
        else { return nil }
        return environment
    }

    /// Run when Glewlwyd runs, or always when providers are required (then a missing one fails).
    static var isEnabled: Bool { providersRequired || environment != nil }

    static func require() throws -> Environment {
        try #require(environment, "Glewlwyd is not running: start it with scripts/providers/glewlwyd start")
    }
}

/// A provider the shared scenarios run against.
enum ProviderKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case dev
    case glewlwyd

    var testDescription: String { rawValue }

    /// The kinds to run: the development provider always, Glewlwyd when enabled.
    static var enabled: [ProviderKind] { Glewlwyd.isEnabled ? [.dev, .glewlwyd] : [.dev] }
}

/// One provider running for a test, with what the test needs to drive it.
struct Harness: Sendable {
    let kind: ProviderKind
    let provider: OpenIDProvider
    let store: CredentialStore
    let dev: DevProvider?
    let glewlwyd: Glewlwyd.Environment?
    /// An introspecting client that may look at every token of the test client.
    let inspector: OpenIDProvider

    /// Whether `token` is active, asked of the provider. A token that was never issued is a
    /// failure of the test, not "inactive": a sign-out test must not pass on a missing token.
    func isActive(_ token: String?) async throws -> Bool {
        let token = try #require(token, "this token was never issued")
        return try await inspector.introspect(token, kind: .accessToken).active
    }

    func stop() async { await dev?.stop() }
}

/// Starts `kind` and a client for it.
func makeHarness(
    _ kind: ProviderKind,
    devConfiguration: DevProviderConfiguration = .default,
    scopes: [String]? = nil,
    clock: (any LatchkeyClock)? = nil,
    tweak: (inout OpenIDProviderConfiguration) -> Void = { _ in }
) async throws -> Harness {
    let clock: any LatchkeyClock = clock ?? SystemClock()
    // Client secrets are secrets too: no log line of the trace pass may hold one.
    TraceLog.register(secret: "latchkey-confidential-secret")
    let store = CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock)
    switch kind {
    case .dev:
        let dev = try await DevProvider.start(
            configuration: devConfiguration, signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        var configuration = OpenIDProviderConfiguration(
            issuer: dev.issuer, clientID: "latchkey-cli",
            scopes: scopes ?? ["openid", "profile", "email", "offline_access"], allowsPasswordGrant: true)
        tweak(&configuration)
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
            transport: transport)
        return Harness(
            kind: kind,
            provider: OpenIDProvider(
                configuration: configuration, transport: transport, logger: TraceLog.logger("provider"), clock: clock),
            store: store, dev: dev, glewlwyd: nil, inspector: inspector)
    case .glewlwyd:
        let environment = try Glewlwyd.require()
        let issuer = try #require(URL(string: environment.issuer))
        // Glewlwyd's quirks: the password grant and revocation need the confidential client.
        var configuration = OpenIDProviderConfiguration(
            issuer: issuer, clientID: environment.confidentialClientID,
            authentication: .basic(secret: environment.clientSecret),
            scopes: scopes?.filter { $0 != "device_sso" } ?? ["openid", "profile", "email", "offline_access"],
            allowsPasswordGrant: true)
        tweak(&configuration)
        // clientSecret_post introspection sees every client's tokens there.
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuer, clientID: environment.confidentialClientID,
                authentication: .post(secret: environment.clientSecret), allowsPasswordGrant: true),
            transport: transport)
        return Harness(
            kind: kind,
            provider: OpenIDProvider(
                configuration: configuration, transport: transport, logger: TraceLog.logger("provider"), clock: clock),
            store: store, dev: nil, glewlwyd: environment, inspector: inspector)
    }
}

func withHarness(
    _ kind: ProviderKind,
    devConfiguration: DevProviderConfiguration = .default,
    scopes: [String]? = nil,
    clock: (any LatchkeyClock)? = nil,
    tweak: (inout OpenIDProviderConfiguration) -> Void = { _ in },
    _ body: (Harness) async throws -> Void
) async throws {
    func run() async throws {
        let harness = try await makeHarness(
            kind, devConfiguration: devConfiguration, scopes: scopes, clock: clock, tweak: tweak)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }
    // Glewlwyd's own database does not take the whole suite at once: one test at a time.
    if kind == .glewlwyd { try await AsyncGate.glewlwyd.run(run) } else { try await run() }
}

/// Plays the browser: signs in at the provider's page and follows the redirect to the listener.
enum Browser {
    static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    static func signIn(at url: URL, harness: Harness, username: String = "alice", password: String = "alice-password")
        async throws
    {
        let location: String
        switch harness.kind {
        case .dev:
            // The dev provider's form posts every query parameter back with the credentials.
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            var request = HTTPClientRequest(url: url.absoluteString.components(separatedBy: "?")[0])
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            var components = URLComponents()
            components.queryItems =
                items + [
                    URLQueryItem(name: "username", value: username), URLQueryItem(name: "password", value: password),
                ]
            let body = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await client.execute(request, timeout: .seconds(10))
            location = try #require(response.headers.first(name: "Location"))
        case .glewlwyd:
            let environment = try #require(harness.glewlwyd)
            var login = HTTPClientRequest(url: environment.loginAPI)
            login.method = .POST
            login.headers.add(name: "Content-Type", value: "application/json")
            login.body = .bytes(ByteBuffer(string: #"{"username":"\#(username)","password":"\#(password)"}"#))
            let loggedIn = try await client.execute(login, timeout: .seconds(10))
            let cookie = try #require(loggedIn.headers.first(name: "Set-Cookie")?.split(separator: ";").first)
            var authorize = HTTPClientRequest(url: url.absoluteString + "&g_continue")
            authorize.headers.add(name: "Cookie", value: String(cookie))
            let response = try await client.execute(authorize, timeout: .seconds(10))
            location = try #require(response.headers.first(name: "Location"))
        }
        _ = try await client.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
    }
}
