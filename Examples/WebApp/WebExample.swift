// A small Hummingbird site that signs users in with Latchkey: "signed in as alice", a page
// that calls the provider's userinfo API with the user's token, and a sign-out button.
//
//     swift run latchkey-web-example              # with a development provider, on :8080
//     swift run latchkey-web-example --issuer URL --client-id ID --client-secret S --port 8766
//     swift run latchkey-web-example --postgres postgres://… --key-hex … --port 8081   # a fleet
import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyHummingbird
import LatchkeyPostgres
import PostgresNIO
import ServiceLifecycle
import UnixSignals

@main
struct WebExample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey-web-example", abstract: "A web app that signs users in and out with Latchkey.")

    @Option(help: "The port to listen on (127.0.0.1).") var port = 8080
    @Option(help: "The provider's issuer; without it, a development provider is started (users alice and bob).")
    var issuer: String?
    @Option(help: "The app's client id at the provider.") var clientId = "latchkey-web-example"
    @Option(help: "The app's client secret.") var clientSecret = "latchkey-web-example-secret"
    @Option(help: "The development provider's port (0: any).") var providerPort = 0
    @Option(help: "Where the development provider sends back-channel logouts (default: this instance).")
    var backchannelURI: String?
    @Option(help: "A PostgreSQL store shared by several instances (postgres://USER@HOST:PORT/DB).")
    var postgres: String?
    @Option(help: "The store's 256-bit key, in hex (PostgreSQL): the same for every instance.")
    var keyHex: String?
    @Option(
        help:
            "The scopes each sign-in asks for (space separated; default: openid profile email). With offline_access, prompt=consent is sent too (OpenID Connect Core §11)."
    )
    var scope: String?
    @Option(help: "prompt's values for each sign-in (space separated: login, consent, select_account).")
    var prompt: String?
    @Option(help: "max_age: re-authenticate users who signed in longer ago than this (seconds).")
    var maxAge: Int?

    func run() async throws {
        let base = "http://127.0.0.1:\(port)"
        var devProvider: DevProvider?
        let issuerURL: URL
        if let issuer, let url = URL(string: issuer) {
            issuerURL = url
        } else {
            var configuration = DevProviderConfiguration.default
            configuration.clients.append(
                .init(
                    clientID: clientId, clientSecret: clientSecret, redirectURIs: ["\(base)/callback"],
                    postLogoutRedirectURIs: ["\(base)/"],
                    backchannelLogoutURI: backchannelURI
                        ?? "\(base)/backchannel-logout"))
            let provider = try await DevProvider.start(configuration: configuration, port: providerPort)
            devProvider = provider
            issuerURL = provider.issuer
            Self.say("development provider at \(provider.issuer) (users alice / alice-password, bob / bob-password)")
        }
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuerURL, clientID: clientId, authentication: .basic(secret: clientSecret)),
            transport: AsyncHTTPClientTransport.shared)
        let postgresClient = try postgres.map {
            PostgresClient(configuration: try PostgresCredentialStorage.clientConfiguration(url: $0))
        }
        let runningClient = Task { await postgresClient?.run() }
        defer { runningClient.cancel() }
        let store: CredentialStore
        if let postgresClient {
            guard let hex = keyHex, let key = Self.key(hex: hex) else {
                throw ValidationError("--postgres needs --key-hex with 64 hex digits, the same for every instance.")
            }
            store = CredentialStore(storage: try await PostgresCredentialStorage.open(client: postgresClient, key: key))
        } else {
            store = CredentialStore.inMemory()
        }
        let sessions = try WebSessions(
            store: store, provider: provider, redirectURI: URL(string: "\(base)/callback")!,
            postLogoutRedirectURI: URL(string: "\(base)/"),
            authorization: AuthorizationParameters(
                scopes: scope.map { $0.split(separator: " ").map(String.init) },
                prompt: prompt.map { $0.split(separator: " ").map(String.init) } ?? [], maxAge: maxAge))
        let router = Router(context: LatchkeyWebContext.self)
        router.add(middleware: WebSessionMiddleware(sessions: sessions))
        WebSignInRoutes<LatchkeyWebContext>(sessions: sessions).register(on: router)
        router.get("/") { _, context in Page.home(context) }
        router.group("protected").add(middleware: RequireSignIn<LatchkeyWebContext>()).get { _, context in
            try await Page.protected(context, provider: provider)
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { _ in Self.say("listening on \(base)") })
        // Stale sessions and the pending sign-ins of browsers that never came back, every minute.
        let sweeper = WebSessionSweeper(sessions: sessions, logger: app.logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [app, sweeper], gracefulShutdownSignals: [.sigterm, .sigint], logger: app.logger))
        try await group.run()
        await devProvider?.stop()
    }

    /// Writes a line at once, also into a pipe (a supervisor waits for "listening on").
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func key(hex: String) -> SymmetricKey? {
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return SymmetricKey(data: bytes)
    }
}
