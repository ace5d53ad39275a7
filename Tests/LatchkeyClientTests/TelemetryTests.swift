import Foundation
import InMemoryTracing
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing
import Tracing

/// Latchkey's metrics and spans, read from the test process's recording backends
/// (``RecordedTelemetry``) while the development provider answers for real.
@Suite("Metrics and spans")
struct TelemetryTests {
    typealias Metric = LatchkeyTelemetry.Metric

    @Test("20 callers needing a refresh: one request counted, 19 waits, one refresh span over the token request")
    func refresh() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let before = try await credential.token
            let (_, recorded) = try await RecordedTelemetry.recording {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<20 { group.addTask { try await credential.refresh() } }
                    try await group.waitForAll()
                }
            }
            #expect(recorded.count(Metric.refreshRequests, ["outcome": "succeeded"]) == 1)
            #expect(recorded.count(Metric.refreshRequests) == 1)
            #expect(recorded.count(Metric.refreshWaits, ["reason": "joined"]) == 19)
            #expect(recorded.values(Metric.refreshDuration, ["outcome": "succeeded"]).count == 1)
            #expect(
                recorded.values(Metric.providerRequestDuration, ["endpoint": "token", "status": "2xx"]).count == 1)

            let refresh = try #require(recorded.spans.first { $0.operationName == LatchkeyTelemetry.SpanName.refresh })
            let request = try #require(recorded.spans.first { $0.operationName == "POST token" })
            #expect(recorded.spans.filter { $0.operationName == LatchkeyTelemetry.SpanName.refresh }.count == 1)
            #expect(request.parentSpanID == refresh.spanID)
            #expect(request.kind == .client)
            #expect(request.attributes["latchkey.endpoint"]?.toSpanAttribute() == "token")
            #expect(request.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
            #expect(request.attributes["server.address"]?.toSpanAttribute() == "127.0.0.1")

            let after = try await credential.token
            expectNoSecrets(recorded, [before, after])
        }
    }

    @Test("a refresh token the provider refuses is counted as rejected, and the span says error")
    func rejectedRefresh() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let refreshToken = try #require(try await credential.token.refreshToken)
            try await harness.provider.revoke(refreshToken, kind: .refreshToken)
            let (_, recorded) = await RecordedTelemetry.recording { try? await credential.refresh() }
            #expect(recorded.count(Metric.refreshRequests, ["outcome": "rejected"]) == 1)
            #expect(recorded.values(Metric.refreshDuration, ["outcome": "failed"]).count == 1)
            #expect(recorded.values(Metric.providerRequestDuration, ["endpoint": "token", "status": "4xx"]).count == 1)
            let refresh = try #require(recorded.spans.first { $0.operationName == LatchkeyTelemetry.SpanName.refresh })
            #expect(refresh.status?.code == .error)
        }
    }

    @Test(
        "an offline sign-out: revocations failed and queued, a partial sign-out, then the outbox's depth, age and drain"
    )
    func signOutAndOutbox() async throws {
        let clock = TestClock()
        try await withHarness(.dev, clock: clock) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let token = try await credential.token
            let dev = try #require(harness.dev)
            dev.faults.set(.status(503), for: .revocation)

            let (result, signOut) = await RecordedTelemetry.recording {
                await harness.store.signOut(.current, options: .local)
            }
            guard case .partial = result else {
                Issue.record("expected a partial sign-out, got \(result)")
                return
            }
            #expect(signOut.count(Metric.signOuts, ["scope": "device", "outcome": "partial"]) == 1)
            #expect(signOut.values(Metric.signOutDuration, ["scope": "device"]).count == 1)
            #expect(signOut.count(Metric.revocations, ["via": "direct", "outcome": "failed"]) == 2)
            #expect(signOut.count(Metric.revocations, ["token": "refresh_token", "outcome": "failed"]) == 1)
            let span = try #require(signOut.spans.first { $0.operationName == LatchkeyTelemetry.SpanName.signOut })
            #expect(span.attributes["latchkey.sign_out.outcome"]?.toSpanAttribute() == "partial")
            #expect(signOut.spans.filter { $0.operationName == "POST revocation" }.count == 2)

            // Still offline 30 seconds later: both wait, the oldest for 30 s.
            clock.advance(30)
            let (_, offline) = await RecordedTelemetry.recording {
                await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            }
            #expect(offline.values(Metric.outboxDepth) == [2])
            #expect(offline.values(Metric.outboxOldestAge) == [30])
            #expect(offline.count(Metric.revocations, ["via": "outbox", "outcome": "failed"]) == 2)

            dev.faults.clear(.revocation)
            let (report, online) = await RecordedTelemetry.recording {
                await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            }
            #expect(report.revoked == 2)
            #expect(online.count(Metric.revocations, ["via": "outbox", "outcome": "revoked"]) == 2)
            #expect(online.values(Metric.outboxDepth) == [0])
            #expect(online.values(Metric.outboxOldestAge) == [0])
            let drain = try #require(online.spans.first { $0.operationName == LatchkeyTelemetry.SpanName.drainOutbox })
            #expect(drain.attributes["latchkey.outbox.revoked"]?.toSpanAttribute() == 2)

            for recorded in [signOut, offline, online] { expectNoSecrets(recorded, [token]) }
        }
    }

    @Test(
        "ending the provider session: the ID token in the end-session URL reaches no span, not even the HTTP client's")
    func endSessionSpans() async throws {
        // An HTTP client made once a tracer is bootstrapped, as in a server that sets up its
        // backends first: AsyncHTTPClient picks the global tracer up when it is made.
        RecordedTelemetry.install()
        let client = AsyncHTTPClientTransport()
        defer { Task { try? await client.shutdown() } }
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
                transport: TraceLog.watching(client))
            _ = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let token = try #require(try await harness.store.default?.token)
            #expect(token.idToken != nil)
            var options = SignOutOptions.local
            options.endProviderSession = true
            let (result, recorded) = await RecordedTelemetry.recording {
                await harness.store.signOut(.current, options: options)
            }
            #expect(result.description == "complete")
            let endSession = try #require(recorded.spans.first { $0.operationName == "GET end-session" })
            #expect(endSession.attributes["http.response.status_code"] != nil)
            expectNoSecrets(recorded, [token])
        }
    }

    /// No metric label or dimension, span name, attribute or recorded error holds a token.
    private func expectNoSecrets(_ recorded: RecordedTelemetry.Recording, _ tokens: [Token]) {
        let secrets = tokens.flatMap { token in
            TokenKind.allCases.compactMap { token.value(of: $0) }
        }
        var texts = recorded.events.map(\.description)
        for span in recorded.spans {
            texts.append(span.operationName)
            span.attributes.forEach { name, value in texts.append("\(name)=\(value)") }
            texts += span.errors.map { "\($0.error)" }
        }
        #expect(!texts.isEmpty)
        // Named with the token cut out: the test log is a log too.
        let leaks = texts.filter { text in secrets.contains { text.contains($0) } }.map { text in
            secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "<token>") }
        }
        #expect(leaks.isEmpty, "tokens reached metrics or spans: \(leaks)")
    }
}
