import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// Every fault against every server step of a sign-out, under both policies: the outcome is
/// what DESIGN.md says, and once the faults clear, nothing of this device stays alive.
@Suite("Fault matrix")
struct FaultMatrixTests {
    enum Fault: String, CaseIterable, Sendable {
        case unavailable, timeout, refused, dropped, malformed, oversized
    }

    enum Step: String, CaseIterable, Sendable {
        case revoke, globalSignOut, endSession, refresh

        var endpoint: DevProviderEndpoint {
            switch self {
            case .revoke: .revocation
            case .globalSignOut: .globalSignOut
            case .endSession: .endSession
            case .refresh: .token
            }
        }

        var kind: EndpointKind {
            switch self {
            case .revoke: .revocation
            case .globalSignOut: .globalSignOut
            case .endSession: .endSession
            case .refresh: .token
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var fault: Fault
        var step: Step
        var policy: SignOutPolicy
        var testDescription: String { "\(fault.rawValue) at \(step.rawValue), \(policy.rawValue)" }

        /// Whether the fault makes the step fail. A 200 with a body that is not JSON is still a
        /// success where Latchkey does not need the body (RFC 7009 revocation, global sign-out,
        /// end-session); everything else fails.
        var fails: Bool { !(fault == .malformed && step != .refresh) }
    }

    static let cases: [Case] = Fault.allCases.flatMap { fault in
        Step.allCases.flatMap { step in SignOutPolicy.allCases.map { Case(fault: fault, step: step, policy: $0) } }
    }

    @Test("sign-out under a fault", arguments: cases)
    func matrix(testCase: Case) async throws {
        let clock = TestClock()
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        defer { Task { await dev.stop() } }
        let store = CredentialStore(
            storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock)
        // Only the faulty client has a short timeout: setting up on a loaded machine must not time out.
        func provider(
            refusing: Bool, timeout: Duration = .seconds(30), metadata: ProviderMetadata? = nil
        ) -> OpenIDProvider {
            var configuration = OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli",
                scopes: ["openid", "profile", "email", "offline_access", "device_sso"],
                requestOptions: HTTPTransportOptions(timeout: timeout), allowsPasswordGrant: true)
            if refusing {
                // Connection refused: the endpoint points at a port nothing listens on.
                configuration.endpoints[testCase.step.kind] = URL(string: "http://127.0.0.1:9/refused")
            }
            return OpenIDProvider(
                configuration: configuration, transport: transport, metadata: metadata,
                logger: TraceLog.logger("provider"), clock: clock)
        }
        let healthy = provider(refusing: false)
        let credential = try await healthy.signIn(.password(username: "alice", password: "alice-password"), into: store)
        let token = try await credential.token
        // The faulty client gets the metadata handed over. It has a short timeout only when the
        // fault is one: under a loaded sanitizer pass, healthy steps must not time out.
        let faulty = provider(
            refusing: testCase.fault == .refused,
            timeout: TestTiming.scaled(.seconds(testCase.fault == .timeout ? 4 : 30)),
            metadata: try await healthy.metadata())
        await store.register(faulty)
        switch testCase.fault {
        case .unavailable: dev.faults.set(.status(503, retryAfter: 1), for: testCase.step.endpoint)
        case .timeout:
            dev.faults.set(.latency(milliseconds: TestTiming.scaled(milliseconds: 10_000)), for: testCase.step.endpoint)
        case .refused: break
        case .dropped: dev.faults.set(.dropConnection, for: testCase.step.endpoint)
        case .malformed: dev.faults.set(.malformedBody, for: testCase.step.endpoint)
        case .oversized: dev.faults.set(.oversizedBody(bytes: 10_000_000), for: testCase.step.endpoint)
        }
        if testCase.step == .refresh { clock.advance(600) }  // the global sign-out must refresh first

        var options = SignOutOptions(global: testCase.step != .endSession, policy: testCase.policy)
        options.endProviderSession = testCase.step == .endSession
        let result = await store.signOut(.current, options: options)

        let stepName = testCase.step == .revoke ? "revoke-refresh-token" : SignOutStep.Kind.description(testCase.step)
        let step = result.steps.first { $0.kind.description == stepName }
        try await Self.expect(
            result, fails: testCase.fails, policy: testCase.policy, store: store, step: step,
            queued: testCase.step != .refresh)
        if testCase.fails {
            #expect(step?.isRetryable == true || testCase.fault == .malformed || testCase.fault == .oversized)
            #expect(step?.reason?.text.contains(token.refreshToken ?? "-") == false)
        }

        // The faults clear: what is queued drains, a device still signed in signs out, and every
        // token of this device is dead.
        dev.faults.clear()
        await store.register(healthy)
        if try await store.all().isEmpty == false {
            let retry = await store.signOut(.current, options: .local)
            #expect(retry.signedOutLocally)
        }
        let drained = await store.drainOutbox(DrainOptions(includeNotDue: true))
        #expect(drained.failed == 0)
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
            transport: transport)
        for value in [token.accessToken, token.refreshToken, token.deviceSecret] {
            let answer = try await inspector.introspect(try #require(value, "never issued"), kind: .accessToken)
            #expect(answer.active == false)
        }
    }
}

extension FaultMatrixTests {
    @Test(
        "the outbox insert fails: under either policy the account stays, and nothing of it is lost",
        arguments: SignOutPolicy.allCases)
    func outboxInsertFails(policy: SignOutPolicy) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let store = CredentialStore(storage: FailingOutboxStorage(), logger: TraceLog.logger("store"))
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: transport, logger: TraceLog.logger("provider"))
        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: store)
        let token = try await credential.token
        dev.faults.set(.status(503, retryAfter: 1), for: .revocation)
        guard case .failed = await store.signOut(.current, options: SignOutOptions(policy: policy)) else {
            Issue.record("expected failed")
            return
        }
        #expect(try await store.all().count == 1, "still signed in: the token was neither revoked nor queued")
        dev.faults.clear()
        guard case .complete = await store.signOut(.current, options: SignOutOptions(policy: policy)) else {
            Issue.record("expected complete once the provider answers")
            return
        }
        for value in [token.accessToken, token.refreshToken] {
            let issued = try #require(value, "never issued")
            #expect(try await Self.inspector(dev).introspect(issued, kind: .accessToken).active == false)
        }
    }

    @Test("a damaged row: signing every account out signs out the readable ones and reports the damaged one")
    func damagedRow() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("credentials.sqlite").path
        let store = CredentialStore(storage: try SQLiteCredentialStorage(path: path), logger: TraceLog.logger("store"))
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: transport, logger: TraceLog.logger("provider"))
        let alice = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
        let bob = try await provider.signIn(.password(username: "bob", password: "bob-password"), into: store)
        let bobToken = try await bob.token
        let sqlite = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [path, "UPDATE credential SET sealed_token = x'00' WHERE id = '\(alice.id)'"])
        try #require(sqlite.status == 0, "\(sqlite.stderr)")
        let result = await store.signOut(.all)
        guard case .failed(let error, let steps) = result else {
            Issue.record("expected failed, got \(result)")
            return
        }
        #expect(error.code == .damagedRecord)
        #expect(error.description.contains(alice.id.rawValue))
        #expect(steps.contains { $0.account == bob.id && $0.kind == .localRemoval && $0.status == .succeeded })
        #expect(try await store.all().isEmpty)
        #expect(try await store.damagedRecords().map(\.id) == [alice.id.rawValue])
        #expect(
            try await Self.inspector(dev).introspect(bobToken.refreshToken ?? "", kind: .refreshToken).active == false)
    }

    /// The outcome a fault at one step must have: complete when the step did not fail; still
    /// signed in under `serverFirst`; signed out here and partial under `alwaysLocal`, the step
    /// queued when it is a server step (a revocation, the global sign-out, the end of the
    /// session: every one the outbox takes).
    static func expect(
        _ result: SignOutResult, fails: Bool, policy: SignOutPolicy, store: CredentialStore, step: SignOutStep?,
        queued: Bool
    ) async throws {
        switch (fails, policy) {
        case (false, _):
            guard case .complete = result else {
                Issue.record("expected complete, got \(result)")
                return
            }
        case (true, .serverFirst):
            guard case .failed = result else {
                Issue.record("expected failed, got \(result)")
                return
            }
            #expect(try await store.all().count == 1, "still signed in")
            #expect(step?.status == .failed)
        case (true, .alwaysLocal):
            guard case .partial = result else {
                Issue.record("expected partial, got \(result)")
                return
            }
            #expect(try await store.all().isEmpty, "signed out here")
            #expect(step?.status == (queued ? .queued : .failed))
        }
    }

    static func inspector(_ dev: DevProvider) -> OpenIDProvider {
        OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
            transport: transport)
    }
}

extension SignOutStep.Kind {
    /// The step's report name for a fault-matrix step.
    static func description(_ step: FaultMatrixTests.Step) -> String {
        switch step {
        case .revoke: "revoke-refresh-token"
        case .globalSignOut: "global-signout"
        case .endSession: "end-session"
        case .refresh: "refresh"
        }
    }
}

extension FaultMatrixTests {
    /// The faults of the matrix but `refused`: AM's sessions endpoint is on the same server as
    /// its OAuth endpoints, so a refused connection would refuse the revocations too (those
    /// rows are the revocation ones); a dropped connection is the session endpoint's own.
    static let sessionLogoutCases: [Case] = Fault.allCases.filter { $0 != .refused }.flatMap { fault in
        SignOutPolicy.allCases.map { Case(fault: fault, step: .revoke, policy: $0) }
    }

    @Test(
        "a Ping journey's session-logout under a fault",
        arguments: sessionLogoutCases.map { ($0.fault, $0.policy) })
    func sessionLogout(fault: Fault, policy: SignOutPolicy) async throws {
        let setup = try await PingJourneyTests.setUp()
        defer { Task { await setup.stop() } }
        let (_, token) = try await setup.signIn()
        // The faulty client: short timeouts, everything it needs fetched already.
        let faulty = PingJourneyProvider(
            configuration: PingJourneyConfiguration(
                serverURL: setup.dev.issuer, realm: "alpha", clientID: "latchkey-cli",
                cookieName: setup.dev.sessionCookieName,
                requestOptions: HTTPTransportOptions(timeout: TestTiming.scaled(.seconds(2)))),
            transport: transport, logger: TraceLog.logger("ping"))
        _ = try await faulty.openID.endpoint(.revocation)
        await setup.store.register(faulty)
        switch fault {
        case .unavailable: setup.dev.faults.set(.status(503, retryAfter: 1), for: .sessionLogout)
        case .timeout:
            setup.dev.faults.set(.latency(milliseconds: TestTiming.scaled(milliseconds: 5_000)), for: .sessionLogout)
        case .refused: break
        case .dropped: setup.dev.faults.set(.dropConnection, for: .sessionLogout)
        case .malformed: setup.dev.faults.set(.malformedBody, for: .sessionLogout)
        case .oversized: setup.dev.faults.set(.oversizedBody(bytes: 10_000_000), for: .sessionLogout)
        }

        let result = await setup.store.signOut(.current, options: SignOutOptions(policy: policy))
        let step = result.steps.first { $0.kind == .sessionLogout }
        // A 200 whose body is not JSON is a logout all the same: its body is not needed.
        try await Self.expect(
            result, fails: fault != .malformed, policy: policy, store: setup.store, step: step, queued: true)
        #expect(step?.reason?.text.contains(token.sessionToken ?? "-") != true)
        // The OAuth tokens were revoked whatever became of the session.
        #expect(try await setup.isActive(token.accessToken) == false)
        #expect(try await setup.isActive(token.refreshToken) == false)

        // The fault clears: what is queued drains, a device still signed in signs out, and the
        // session is over.
        setup.dev.faults.clear()
        await setup.store.register(setup.ping)
        if try await setup.store.all().isEmpty == false {
            #expect(await setup.store.signOut(.current, options: .local).signedOutLocally)
        }
        let drained = await setup.store.drainOutbox(DrainOptions(includeNotDue: true))
        #expect(drained.failed == 0 && drained.permanent == 0)
        #expect(try await setup.isValid(token.sessionToken) == false)
    }
}
