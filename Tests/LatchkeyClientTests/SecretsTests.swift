import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeySQLite
import LatchkeyTestSupport
import Logging
import NIOConcurrencyHelpers
import Testing

/// Everything Latchkey logs at trace level, and every error it throws, over a whole lifecycle:
/// no token value may appear in any of it.
@Suite("Secrets stay out of logs and errors")
struct SecretsTests {
    /// Keeps every log line, with its metadata.
    final class Capture: Sendable {
        private let lines = NIOLockedValueBox<[String]>([])
        var all: [String] { lines.withLockedValue { $0 } }

        func logger(_ label: String) -> Logger {
            LineLogHandler.logger(label) { line, _ in self.lines.withLockedValue { $0.append(line) } }
        }

        /// A SQLite store in a new folder, logging here: what a device keeps on disk.
        func sqliteStore() throws -> (CredentialStore, folder: URL) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
            let storage = try SQLiteCredentialStorage(
                path: folder.appendingPathComponent("credentials.sqlite").path, logger: logger("sqlite"))
            return (CredentialStore(storage: storage, logger: logger("store")), folder)
        }
    }

    @Test("sign-in, refresh, revocation, failed refresh, offline sign-out and drain log no token")
    func lifecycle() async throws {
        let capture = Capture()
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let (store, folder) = try capture.sqliteStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli",
                scopes: ["openid", "profile", "email", "offline_access", "device_sso"], allowsPasswordGrant: true),
            transport: transport, logger: capture.logger("provider"))
        await store.register(provider)

        var secrets: Set<String> = ["alice-password"]
        var texts: [String] = []
        func remember(_ token: Token) {
            secrets.formUnion(
                [token.accessToken, token.refreshToken, token.idToken, token.deviceSecret].compactMap { $0 })
        }

        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: store)
        remember(try await credential.token)
        remember(try await credential.refresh())
        texts.append("\(await credential.revoke(.accessToken))")
        remember(try await credential.token)
        _ = try await credential.accessToken()
        remember(try await credential.token)
        texts.append("\(try await credential.stored())")

        // Errors: a wrong password, a revoked refresh token, an offline sign-out, a malformed answer.
        do {
            _ = try await provider.passwordToken(username: "alice", password: "wrong-\(UUID())")
        } catch {
            texts.append("\(error)")
            texts.append(String(reflecting: error))
        }
        let second = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
        remember(try await second.token)
        try await provider.revoke(try #require(try await second.token.refreshToken), kind: .refreshToken)
        do {
            _ = try await second.refresh()
        } catch {
            texts.append("\(error)")
            texts.append(String(reflecting: error))
        }
        dev.faults.isOffline = true
        let result = await store.signOut(.all, options: .global)
        texts.append("\(result)")
        texts += result.steps.map { "\($0) \($0.reason?.text ?? "") \(String(describing: $0.error))" }
        for entry in try await store.outboxEntries() {
            var dumped = ""
            dump(entry, to: &dumped)
            texts += ["\(entry)", String(reflecting: entry), dumped]
        }
        dev.faults.isOffline = false
        dev.faults.set(.malformedBody, for: .token)
        do {
            _ = try await provider.passwordToken(username: "bob", password: "bob-password")
        } catch { texts.append("\(error)") }
        dev.faults.clear()
        // A provider that repeats the request in its error, code and description alike.
        let third = try await provider.signIn(.password(username: "bob", password: "bob-password"), into: store)
        remember(try await third.token)
        dev.faults.set(DevProviderFault(echoesRequest: true, remaining: 1), for: .token)
        do {
            _ = try await third.refresh()
            Issue.record("an echoed refusal was taken for tokens")
        } catch {
            texts += ["\(error)", String(reflecting: error)]
        }
        dev.faults.clear()
        let report = await store.drainOutbox(DrainOptions(includeNotDue: true))
        texts.append("\(report) \(report.errors)")

        // A confidential client's secret travels in every request it makes, and nowhere else.
        let clientSecret = "latchkey-confidential-secret"
        secrets.insert(clientSecret)
        let confidential = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential", authentication: .basic(secret: clientSecret),
                allowsPasswordGrant: true),
            transport: transport, logger: capture.logger("confidential"))
        let issued = try await confidential.passwordToken(username: "bob", password: "bob-password")
        remember(issued)
        _ = try await confidential.introspect(try #require(issued.accessToken), kind: .accessToken)
        dev.faults.set(.status(503), for: .introspection)
        do {
            _ = try await confidential.introspect(try #require(issued.accessToken), kind: .accessToken)
        } catch { texts += ["\(error)", String(reflecting: error)] }
        dev.faults.clear()

        #expect(secrets.count > 8, "the tokens of the lifecycle were collected")
        let logged = capture.all
        #expect(logged.count > 10, "trace logging was on")
        for text in logged + texts {
            for secret in secrets where text.contains(secret) {
                Issue.record("a secret appears in: \(text.prefix(120))")
            }
        }
    }

    @Test("a Ping journey's password and session stay out of logs, errors, descriptions and dumps")
    func pingJourney() async throws {
        let capture = Capture()
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let (store, folder) = try capture.sqliteStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let ping = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: dev.issuer, realm: "alpha", journey: "SteppedLogin", clientID: "latchkey-cli"),
            transport: transport, logger: capture.logger("ping"))
        await store.register(ping)
        var secrets: Set<String> = ["alice-password"]
        var texts: [String] = []
        func show(_ value: some Any) {
            var dumped = ""
            dump(value, to: &dumped)
            texts += ["\(value)", String(reflecting: value), dumped]
        }

        // Every page is shown and dumped with its answers filled in.
        var step = try await ping.startJourney()
        while case .page(var page) = step {
            for index in page.callbacks.indices {
                switch page.callbacks[index].kind {
                case .name: page.callbacks[index].setText("alice")
                case .password: page.callbacks[index].setText("alice-password")
                default:
                    if let answer = page.callbacks[index].defaultAnswer { page.callbacks[index].setValue(answer) }
                }
                show(page.callbacks[index])
            }
            show(page)
            step = try await ping.next(page)
        }
        let session = try #require(step.session, "the journey did not end in a session")
        secrets.insert(session.value)
        show(session)
        let credential = try await ping.signIn(session, into: store)
        let token = try await credential.token
        secrets.formUnion([token.accessToken, token.refreshToken, token.idToken].compactMap { $0 })
        show(token)
        show(try await credential.stored())
        show(await credential.revoke())
        _ = try await credential.accessToken()
        secrets.formUnion(
            [try await credential.token.accessToken, try await credential.token.refreshToken].compactMap { $0 })
        show(try await ping.introspect(session.value, kind: .sessionToken))

        // A wrong password, a refused logout, an offline sign-out and its outbox.
        var first = try #require(try await ping.startJourney().page, "the journey did not start with a page")
        first.callbacks[1].setText("alice")
        var second = try #require(try await ping.next(first).page, "the journey did not ask for the password")
        let wrong = "wrong-\(UUID())"
        secrets.insert(wrong)
        second.callbacks[0].setText(wrong)
        do {
            _ = try await ping.next(second)
        } catch { show(error) }
        dev.faults.set(.status(503), for: .sessionLogout)
        do {
            try await ping.logout(session: session.value)
        } catch { show(error) }
        dev.faults.clear()
        dev.faults.isOffline = true
        let result = await store.signOut(.all)
        show(result)
        texts += result.steps.map { "\($0) \($0.reason?.text ?? "") \(String(describing: $0.error))" }
        for entry in try await store.outboxEntries() { show(entry) }
        dev.faults.isOffline = false
        show(await store.drainOutbox(DrainOptions(includeNotDue: true)))

        let logged = capture.all
        #expect(logged.count > 10, "trace logging was on")
        #expect(texts.contains { $0.contains("PasswordCallback") }, "the pages were shown")
        for text in logged + texts {
            for secret in secrets where text.contains(secret) {
                Issue.record("a secret appears in: \(text.prefix(160))")
            }
        }
    }

    /// The trace pass (`LATCHKEY_TEST_TRACE=1`) runs the whole suite with this check on every
    /// log line; here is proof that the check finds what it looks for.
    @Test("the trace pass's check finds a token it has seen, and nothing else")
    func traceCheck() {
        let token = "tok-" + UUID().uuidString + UUID().uuidString
        #expect(TraceLog.leaks(in: "debug store: refreshed \(token)").isEmpty, "not seen yet")
        TraceLog.register(secret: token)
        #expect(TraceLog.leaks(in: "debug store: refreshed [error: \(token)]") == [token])
        #expect(TraceLog.leaks(in: "debug store: refreshed [credential: 1234]").isEmpty)
        TraceLog.register(secret: "at-alice")
        #expect(TraceLog.leaks(in: "at-alice").isEmpty, "fixture-sized values would match ordinary words")
    }
}
