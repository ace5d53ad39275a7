import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import Testing

/// Client behaviour that needs the development provider's fault injection and counters.
@Suite("Client against the development provider")
struct DevProviderClientTests {
    func signIn(_ harness: Harness, _ user: String = "alice") async throws -> Credential {
        try await harness.provider.signIn(.password(username: user, password: "\(user)-password"), into: harness.store)
    }

    @Test("1,000 concurrent accessToken() calls on an expired credential cause exactly one refresh")
    func singleFlight() async throws {
        let clock = TestClock()
        try await withHarness(.dev, clock: clock) { harness in
            let credential = try await signIn(harness)
            let dev = try #require(harness.dev)
            clock.advance(600)  // the 300 s access token has expired
            dev.faults.resetCounters()
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<1_000 {
                    group.addTask {
                        try await harness.provider.credential(credential.id, in: harness.store).accessToken()
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(dev.faults.count("token.refresh_token") == 1)
            #expect(tokens.count == 1)
            #expect(try await credential.token.accessToken == tokens.first)
        }
    }

    @Test("a network failure during refresh is retryable and deletes nothing")
    func offlineRefresh() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await signIn(harness)
            let before = try await credential.token
            harness.dev?.faults.isOffline = true
            let error = await #expect(throws: ProviderError.self) { _ = try await credential.refresh() }
            #expect(error?.code == .transport)
            #expect(error?.isRetryable == true)
            #expect(try await credential.token == before)
            harness.dev?.faults.isOffline = false
            #expect(try await credential.refresh().accessToken != before.accessToken)
        }
    }

    @Test("an unreachable JWKS is a retryable network failure, not a rejected ID token")
    func jwksUnavailable() async throws {
        try await withHarness(.dev) { harness in
            harness.dev?.faults.set(.status(503, retryAfter: 1), for: .jwks)
            let error = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.passwordToken(username: "alice", password: "alice-password")
            }
            #expect(error?.code != .idTokenRejected)
            #expect(error?.endpoint == .jwks)
            #expect(error?.isRetryable == true)
        }
    }

    @Test("keys in the JWKS that Latchkey cannot use are left out: sign-in and refresh go on")
    func unusableKeys() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            await dev.setExtraKeySetEntries([
                #"{"kty":"oct","kid":"hmac-1","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}"#,
                #"{"kty":"EC","kid":"k1","crv":"secp256k1","x":"eA","y":"eQ"}"#,
                #"{"kty":"RSA","kid":"enc-1","use":"enc","alg":"RSA-OAEP-256","n":"AQAB","e":"AQAB"}"#,
                #"{"kty":"OKP","kid":"ed-1","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#,
                "42",
            ])
            let credential = try await signIn(harness)
            let before = try await credential.token
            #expect(try await credential.refresh().accessToken != before.accessToken)
        }
    }

    @Test("a failed revocation keeps its token; the others are still revoked and reported")
    func partialRevocation() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await signIn(harness)
            let dev = try #require(harness.dev)
            dev.faults.set(DevProviderFault(status: 503, retryAfter: 7, remaining: 1), for: .revocation)
            let before = try await credential.token
            let result = await credential.revoke(.all)
            #expect(result.succeeded == false)
            #expect(result.failures.count == 1)
            let failure = try #require(result.failures.values.first)
            #expect(failure.status == 503)
            #expect(failure.retryAfter == .seconds(7))
            #expect(failure.isRetryable)
            #expect(result.removedFromStore == false)
            let after = try await credential.token
            let failedKind = try #require(result.failures.keys.first)
            #expect(after.value(of: failedKind) == before.value(of: failedKind))
            #expect(after.kinds.count == before.kinds.count - 1)
        }
    }

    @Test("the device grant polls through pending to tokens, waiting on the injected clock")
    func deviceCode() async throws {
        let clock = TestClock()
        var configuration = DevProviderConfiguration.default
        configuration.devicePollingInterval = 5
        try await withHarness(.dev, devConfiguration: configuration, clock: clock) { harness in
            let dev = try #require(harness.dev)
            let userCode = UserCode()
            let store = harness.store
            let provider = harness.provider
            let signIn = Task {
                try await provider.signIn(
                    .deviceCode { authorization in userCode.value.withLockedValue { $0 = authorization.userCode } },
                    into: store)
            }
            // Each poll waits its interval on the clock: the test moves time, nothing waits for it.
            try await Self.untilAsleep(clock)
            clock.advance(5)
            try await Self.untilAsleep(clock)  // the first poll came back pending
            #expect(dev.faults.count("token.urn:ietf:params:oauth:grant-type:device_code") == 1)
            let code = try #require(userCode.value.withLockedValue { $0 })
            #expect(code.count == 9)
            #expect(try await approve(code, at: dev) == 200)
            clock.advance(5)
            let credential = try await signIn.value
            #expect(try await credential.stored().metadata.preferredUsername == "alice")
            #expect(dev.faults.count("token.urn:ietf:params:oauth:grant-type:device_code") == 2)
        }
    }

    /// Holds the user code the prompt was shown.
    final class UserCode: Sendable {
        let value = NIOLockedValueBox<String?>(nil)
    }

    /// Waits (briefly, in real time) until a task sleeps on `clock`.
    static func untilAsleep(_ clock: TestClock) async throws {
        for _ in 0..<1_000 where clock.sleeperCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
        try #require(clock.sleeperCount > 0, "nothing went to sleep on the clock")
    }

    /// Approves a device code on the provider's page, as the user would.
    func approve(_ userCode: String, at dev: DevProvider) async throws -> Int {
        var request = HTTPRequest(method: .post, url: dev.url(.deviceVerification))
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let body = "user_code=\(userCode)&username=alice&password=alice-password&action=approve"
        let answer = try await transport.send(request, body: Data(body.utf8), options: HTTPTransportOptions())
        return answer.response.status.code
    }

    @Test("a device code that expires is a timeout, on the injected clock")
    func deviceExpiry() async throws {
        let clock = TestClock()
        var configuration = DevProviderConfiguration.default
        configuration.devicePollingInterval = 5
        configuration.deviceCodeLifetime = 12
        try await withHarness(.dev, devConfiguration: configuration, clock: clock) { harness in
            let store = harness.store
            let provider = harness.provider
            let signIn = Task { try await provider.signIn(.deviceCode { _ in }, into: store) }
            for _ in 0..<3 {
                try await Self.untilAsleep(clock)
                clock.advance(5)
            }
            let error = await #expect(throws: ProviderError.self) { _ = try await signIn.value }
            #expect(error?.code == .timedOut)
        }
    }

    @Test("a redirect with another state is refused before any code exchange")
    func stateMismatch() async throws {
        try await withHarness(.dev) { harness in
            let redirect = try #require(URL(string: "http://127.0.0.1:1/callback"))
            let request = try await harness.provider.authorizationRequest(redirectURI: redirect)
            let forged = try #require(URL(string: "http://127.0.0.1:1/callback?code=abc&state=not-\(request.state)"))
            harness.dev?.faults.resetCounters()
            let error = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.completeAuthorization(request, callbackURL: forged)
            }
            #expect(error?.code == .stateMismatch)
            #expect(harness.dev?.faults.count(.token) == 0)
        }
    }

    @Test("the browser flow times out when the browser never comes back")
    func browserTimeout() async throws {
        try await withHarness(.dev) { harness in
            let error = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.signIn(
                    .browser(listener: NIOLoopbackRedirectListener(), timeout: .milliseconds(300)) { _ in },
                    into: harness.store)
            }
            #expect(error?.code == .timedOut)
        }
    }

    @Test("discovery falls back to RFC 8414 metadata; configured endpoints win")
    func discoveryFallback() async throws {
        try await withHarness(
            .dev,
            tweak: { $0.endpoints[.userinfo] = URL(string: "http://127.0.0.1:9/elsewhere") }
        ) { harness in
            let dev = try #require(harness.dev)
            dev.faults.set(.status(404), for: .discovery)
            let metadata = try await harness.provider.metadata()
            #expect(dev.faults.count(.metadata) == 1)
            #expect(metadata.endpoints[.token] == dev.url(.token))
            #expect(metadata.endpoints[.userinfo]?.absoluteString == "http://127.0.0.1:9/elsewhere")
            #expect(metadata.endpoints[.globalSignOut] == dev.url(.globalSignOut))
            _ = try await harness.provider.metadata()
            #expect(dev.faults.count(.metadata) == 1)  // cached
        }
    }

    @Test("plain http to a non-loopback host is refused before anything is sent")
    func httpsRequired() async throws {
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: try #require(URL(string: "http://login.example.com")), clientID: "x", allowsPasswordGrant: true),
            transport: transport)
        let error = await #expect(throws: ProviderError.self) { _ = try await provider.metadata() }
        #expect(error?.code == .insecureEndpoint)
        #expect(EndpointSecurity.isAcceptable(try #require(URL(string: "http://127.0.0.2:80/x"))))
        #expect(EndpointSecurity.isAcceptable(try #require(URL(string: "http://[::1]:80/x"))))
        #expect(!EndpointSecurity.isAcceptable(try #require(URL(string: "http://127.0.0.1.example.com/x"))))
    }

    @Test(
        "bodies past the size cap and answers past the timeout (head or body) are transport errors",
        .timeLimit(.minutes(TestTiming.minutes(1))))
    func limits() async throws {
        try await withHarness(.dev, tweak: { $0.requestOptions.maximumBodySize = 64 * 1024 }) { harness in
            let dev = try #require(harness.dev)
            dev.faults.set(.oversizedBody(bytes: 10_000_000), for: .token)
            let large = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.passwordToken(username: "alice", password: "alice-password")
            }
            #expect((large?.underlying as? TransportError)?.kind == .bodyTooLarge)
            dev.faults.set(.malformedBody, for: .token)
            let malformed = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.passwordToken(username: "alice", password: "alice-password")
            }
            #expect(malformed?.code == .invalidResponse)

            // Only the slow request gets the short timeout: on a loaded machine an ordinary
            // request may take longer than a second, and that is not what this test is about.
            var configuration = harness.provider.configuration
            configuration.requestOptions.timeout = TestTiming.scaled(.seconds(2))
            let impatient = OpenIDProvider(configuration: configuration, transport: transport)
            _ = try await impatient.metadata()
            dev.faults.set(.latency(milliseconds: TestTiming.scaled(milliseconds: 6_000)), for: .token)
            let slow = await #expect(throws: ProviderError.self) {
                _ = try await impatient.passwordToken(username: "alice", password: "alice-password")
            }
            #expect((slow?.underlying as? TransportError)?.kind == .timedOut)
            #expect(slow?.isRetryable == true)

            // The head comes at once and the body a byte every 200 ms: its 500-odd bytes would
            // take well over a minute. The timeout covers the body too.
            dev.faults.set(.trickle(milliseconds: 200), for: .token)
            let trickling = await #expect(throws: ProviderError.self) {
                _ = try await impatient.passwordToken(username: "alice", password: "alice-password")
            }
            #expect((trickling?.underlying as? TransportError)?.kind == .timedOut)
        }
    }

    @Test(
        "a lease holder's request is cut to the lease's deadline: it ends, retryable, before another may hold the lease",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func leaseDeadline() async throws {
        let clock = TestClock()
        // A provider that does not rotate: the answer the client gives up on spends nothing (a
        // rotating one would have spent the refresh token; that is the outbox's and the next
        // refresh's business, not the lease's).
        var configuration = DevProviderConfiguration.default
        configuration.rotateRefreshTokens = false
        let dev = try await DevProvider.start(
            configuration: configuration, signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        defer { Task { await dev.stop() } }
        // The provider's requests may take 10 minutes; the lease, ten seconds: short beside the
        // trickled answer (500 ms a byte), and long enough that the last refresh, whose request is
        // cut to the same lease, answers in time while the whole suite starts at once.
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli",
                requestOptions: HTTPTransportOptions(timeout: .seconds(600)),
                allowsPasswordGrant: true),
            transport: transport, clock: clock)
        let store = CredentialStore(
            storage: InMemoryCredentialStorage(), leaseDuration: TestTiming.scaled(.seconds(10)), clock: clock)
        let credential = try await provider.signIn(
            .password(username: "alice", password: "alice-password"), into: store)
        let before = try await credential.token
        clock.advance(3_600)
        dev.faults.set(.trickle(milliseconds: 500), for: .token)
        let error = await #expect(throws: ProviderError.self) { _ = try await credential.accessToken() }
        #expect(error?.code == .transport || error?.code == .timedOut)
        #expect(error?.isRetryable == true)
        // Nothing changed, and the lease is free again.
        #expect(try await credential.token == before)
        dev.faults.clear()
        #expect(try await !credential.accessToken().isEmpty)
    }

    @Test("redirects are never followed")
    func noRedirects() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let tokens = try await harness.provider.passwordToken(username: "alice", password: "alice-password")
            var components = try #require(URLComponents(url: dev.url(.endSession), resolvingAgainstBaseURL: false))
            components.queryItems = [
                URLQueryItem(name: "id_token_hint", value: tokens.idToken),
                URLQueryItem(name: "post_logout_redirect_uri", value: "http://127.0.0.1:9/logged-out"),
            ]
            let answer = try await transport.send(
                HTTPRequest(method: .get, url: try #require(components.url)), body: nil, options: HTTPTransportOptions()
            )
            #expect(answer.response.status.code == 302)
        }
    }

    @Test("OAuth errors keep the code, description and status; unknown codes are kept as they came")
    func errorShape() async throws {
        try await withHarness(.dev) { harness in
            let error = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.passwordToken(username: "alice", password: "wrong")
            }
            #expect(error?.code == .oauth)
            #expect(error?.oauthError == .invalidGrant)
            #expect(error?.status == 400)
            #expect(error?.errorDescription?.isEmpty == false)
            #expect(error?.endpoint == .token)
            #expect(OAuthErrorCode(rawValue: "custom_thing").rawValue == "custom_thing")
            #expect(error?.description.contains("wrong") == false)
        }
    }

    @Test("remove() is local: the tokens stay active at the provider")
    func removeIsLocal() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await signIn(harness)
            let token = try await credential.token
            harness.dev?.faults.resetCounters()
            try await credential.remove()
            #expect(try await harness.store.all().isEmpty)
            #expect(harness.dev?.faults.counters.isEmpty == true)
            #expect(try await harness.isActive(token.accessToken))
        }
    }

    @Test("userinfo after the access token was revoked refreshes once and succeeds")
    func userInfoRetry() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await signIn(harness)
            try await harness.provider.revoke(try #require(try await credential.token.accessToken), kind: .accessToken)
            let claims = try await credential.userInfo()
            #expect(claims["sub"] == .string("alice"))
        }
    }

    @Test("client authentication is chosen per endpoint")
    func perEndpointAuthentication() async throws {
        try await withHarness(
            .dev,
            tweak: { configuration in
                configuration.clientID = "latchkey-confidential"
                configuration.authentication = .post(secret: "latchkey-confidential-secret")
                configuration.endpointAuthentication[.introspection] = .basic(secret: "latchkey-confidential-secret")
                configuration.endpointAuthentication[.revocation] = ClientAuthentication.none
            }
        ) { harness in
            let credential = try await signIn(harness)
            let answer = try await credential.introspect()
            #expect(answer.active)
            #expect(answer.fields["username"] == .string("alice"))
            // Revocation without a secret is refused for a confidential client: the setting was used.
            let result = await credential.revoke(.accessToken)
            #expect(result.failures[.accessToken]?.oauthError == .invalidClient)
            #expect(try await credential.introspect().active)
        }
    }
}
