import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// The README's Swift examples, run as written: every line of every Swift block in README.md
/// must appear in this file (after the placeholders below), where it compiles and runs against
/// the development provider, with the test playing the browser.
@Suite("README examples")
struct ReadmeTests {
    /// What the README shows in place of a test's own values: an example issuer and path, and
    /// what the example does with the sign-in URL.
    static let placeholders: [(shown: String, here: String)] = [
        (#"URL(string: "https://login.example.com")!"#, "issuer"),
        (#""/home/me/.config/myapp/credentials.sqlite""#, "path"),
        (#""my-cli""#, #""latchkey-cli""#),
        (#"URL(string: "https://tenant.forgeblocks.com/am")!"#, "server"),
        (#""postgres://app@db.internal/latchkey?sslmode=require""#, "url"),
        (#"URL(string: "https://files.example.com/")!"#, "resource"),
        (#"URL(string: "https://files.example.com/a")!"#, "file"),
    ]

    /// The files that run the README's examples: this one, and the fleet store's, which runs
    /// against PostgreSQL in its own test target.
    static let exercisingFiles = [
        "LatchkeyClientTests/ReadmeTests.swift", "LatchkeyPostgresTests/ReadmeFleetTests.swift",
    ]

    @Test("every line of the README's Swift blocks is in this file")
    func readmeLinesAreHere() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var code: Set<String> = []
        for file in Self.exercisingFiles {
            let source = try String(contentsOf: root.appendingPathComponent("Tests/\(file)"), encoding: .utf8)
            code.formUnion(source.split(separator: "\n").map(Self.normalized))
        }
        var blocks = 0
        for block in readme.components(separatedBy: "```swift\n").dropFirst() {
            blocks += 1
            for line in block.components(separatedBy: "\n```")[0].split(separator: "\n") {
                var shown = Self.normalized(line)
                for (placeholder, value) in Self.placeholders {
                    shown = shown.replacingOccurrences(of: placeholder, with: value)
                }
                guard !shown.isEmpty, !shown.hasPrefix("import ") else { continue }
                let exercised = code.contains(shown)
                #expect(exercised, "README line not exercised here: \(shown)")
            }
        }
        #expect(blocks >= 4)
    }

    /// A line without its surrounding space and trailing comment.
    static func normalized(_ line: some StringProtocol) -> String {
        var text = String(line)
        if let comment = text.range(of: "  //") ?? text.range(of: " // ") { text = String(text[..<comment.lowerBound]) }
        return text.trimmingCharacters(in: .whitespaces)
    }

    @Test("using the library: sign in, get an access token, revoke everything")
    func client() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let folder = try TemporaryKeysFolder()
        defer { folder.cleanUp() }
        let issuer = dev.issuer
        let path = folder.path + "/credentials.sqlite"
        let harness = Harness(
            kind: .dev,
            provider: OpenIDProvider(
                configuration: .init(issuer: issuer, clientID: "latchkey-cli"), transport: transport),
            store: .inMemory(), dev: dev, glewlwyd: nil,
            inspector: OpenIDProvider(
                configuration: .init(issuer: issuer, clientID: "latchkey-cli"), transport: transport))
        @Sendable func showToUser(_ url: URL) async {
            Task { try await Browser.signIn(at: url, harness: harness) }
        }

        let store = try await CredentialStore.sqlite(at: path)
        let provider = try await OpenIDProvider.discover(
            OpenIDProviderConfiguration(issuer: issuer, clientID: "latchkey-cli"),
            transport: AsyncHTTPClientTransport.shared)
        let credential = try await provider.signIn(
            .browser(listener: NIOLoopbackRedirectListener()) { url in await showToUser(url) }, into: store)
        let accessToken = try await credential.accessToken()
        let result = await credential.revoke(.all)

        #expect(!accessToken.isEmpty)
        #expect(result.succeeded)
        #expect(try await store.all().isEmpty)
        await dev.stop()
    }

    @Test("tokens a thief cannot use: DPoP, and a token for one resource")
    func boundTokens() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let issuer = dev.issuer
        let resource = try #require(URL(string: "https://files.latchkey.test/"))
        let file = resource.appendingPathComponent("a")

        let bound = OpenIDProviderConfiguration(issuer: issuer, clientID: "latchkey-cli", dpop: .required)
        var configuration = bound
        configuration.allowsPasswordGrant = true
        let credential = try await OpenIDProvider(configuration: configuration, transport: transport).signIn(
            .password(username: "alice", password: "alice-password"), into: .inMemory())
        let filesToken = try await credential.accessToken(for: resource)
        let request = try await credential.authorized(HTTPRequest(method: .get, url: file), resource: resource)

        #expect(request.headerFields[.authorization] == "DPoP \(filesToken)")
        await dev.stop()
    }

    @Test("the store on its own")
    func store() async throws {
        let folder = try TemporaryKeysFolder()
        defer { folder.cleanUp() }
        let path = folder.path + "/credentials.sqlite"
        let token = Token(
            accessToken: "at-alice", refreshToken: "rt-alice", issuedAt: Date(),
            expiresAt: Date().addingTimeInterval(3_600),
            provider: ProviderIdentity(issuer: "https://i.example", clientID: "c"))

        let store = try await CredentialStore.sqlite(at: path)
        let stored = try await store.add(token, tags: ["team": "blue"])
        try await store.setDefault(stored.id)
        let bob = try await store.find(.email("bob@example.com"))
        try await store.remove(stored.id)

        #expect(bob.isEmpty)
        #expect(try await store.default == nil)
    }

    @Test("the development provider in a test, and signing out")
    func devProviderAndSignOut() async throws {
        let provider = try await DevProvider.start()
        provider.faults.set(.status(503, retryAfter: 1), for: .revocation)
        defer { Task { await provider.stop() } }

        let store = CredentialStore.inMemory()
        let client = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: provider.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: transport)
        _ = try await client.signIn(.password(username: "alice", password: "alice-password"), into: store)
        do {
            let provider = client
            await store.register(provider)
            let result = await store.signOut(.current, options: .global)
            switch result {
            case .complete: break
            case .partial(let steps): print(steps.filter { $0.status == .queued })
            case .failed(let error, _): print("still signed in: \(error)")
            }
            guard case .partial = result else {
                Issue.record("the revocations failed, so the result is partial: \(result)")
                return
            }
        }
        provider.faults.clear()
        let report = await store.drainOutbox()
        #expect(report.notDue + report.revoked > 0)
    }

    @Test("a Ping journey walked page by page, then its credential")
    func pingJourney() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let server = dev.issuer
        let store = CredentialStore.inMemory()
        let (username, password) = ("alice", "alice-password")

        let ping = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: server, realm: "alpha", journey: "Login",
                clientID: "latchkey-cli"),
            transport: AsyncHTTPClientTransport.shared)
        var step = try await ping.startJourney()
        while case .page(var page) = step {
            for index in page.callbacks.indices {
                switch page.callbacks[index].kind {
                case .name: page.callbacks[index].setText(username)
                case .password: page.callbacks[index].setText(password)
                default: if let answer = page.callbacks[index].defaultAnswer { page.callbacks[index].setValue(answer) }
                }
            }
            step = try await ping.next(page)
        }
        #expect(step.session != nil, "the journey did not end in a session")
        if case .success(let session) = step {
            let credential = try await ping.signIn(session, into: store)

            #expect(try await credential.token.sessionToken == session.value)
            #expect(try await !credential.accessToken().isEmpty)
        }
    }
}

/// A private folder for a test's files.
struct TemporaryKeysFolder {
    let path: String
    init() throws {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-readme-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}
