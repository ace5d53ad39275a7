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

/// What a provider, a web page or another local process controls never crashes the client and
/// is never trusted blindly.
@Suite("Hostile input")
struct HostileInputTests {
    @Test(
        "a device answer's lifetime of Int.max makes no nonsense deadline; an interval of 0 or 10⁹, a verification URI that is no web page or garbage are typed errors"
    )
    func hostileDeviceAnswers() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.deviceCodeLifetime = .max
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let authorization = try await harness.provider.startDeviceAuthorization()
            #expect(authorization.expiresAt.timeIntervalSinceNow <= 100 * 365 * 86_400 + 60)
            #expect(!authorization.expiresAt.formatted(.iso8601).isEmpty)
            let dev = try #require(harness.dev)
            let answers: [(String, [String: String])] = [
                ("interval", ["interval": "0"]), ("interval", ["interval": "1000000000"]),
                ("verification_uri", ["verification_uri": #""javascript:alert(1)""#]),
                ("verification_uri", ["verification_uri": #""file:///etc/passwd""#]),
                ("verification_uri_complete", ["verification_uri_complete": #""data:text/html,hi""#]),
                ("lacks fields", ["user_code": "[1]"]),
            ]
            for (named, fields) in answers {
                dev.faults.set(DevProviderFault(replacedFields: fields), for: .deviceAuthorization)
                let error = await #expect(throws: ProviderError.self) {
                    _ = try await harness.provider.startDeviceAuthorization()
                }
                #expect(error?.code == .invalidResponse, "\(fields)")
                #expect(error?.reason.contains(named) == true, "\(error?.reason ?? "")")
            }
            dev.faults.set(.malformedBody, for: .deviceAuthorization)
            let garbage = await #expect(throws: ProviderError.self) {
                _ = try await harness.provider.startDeviceAuthorization()
            }
            #expect(garbage?.code == .invalidResponse)
            dev.faults.clear()
        }
    }

    @Test("metadata endpoints that are relative or scheme-less are typed errors naming the field, never a trap")
    func unusableEndpoints() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 0
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let dev = try #require(harness.dev)
            let signedIn = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            dev.faults.set(
                DevProviderFault(replacedFields: [
                    "jwks_uri": #""jwks""#, "token_endpoint": #""not a url""#, "revocation_endpoint": #""revoke""#,
                    "userinfo_endpoint": #""//op.example/userinfo""#,
                ]), for: .discovery)
            // A provider object of its own: what a new process starts with.
            let fresh = OpenIDProvider(configuration: harness.provider.configuration, transport: transport)
            for (kind, field) in [
                (EndpointKind.jwks, "jwks_uri"), (.token, "token_endpoint"), (.revocation, "revocation_endpoint"),
                (.userinfo, "userinfo_endpoint"),
            ] {
                let error = await #expect(throws: ProviderError.self) { _ = try await fresh.endpoint(kind) }
                #expect(error?.code == .invalidEndpoint)
                #expect(error?.description.contains(field) == true, "\(error.map(String.init(describing:)) ?? "")")
            }
            let credential = await harness.store.credential(signedIn.id, provider: fresh)
            let refresh = await #expect(throws: ProviderError.self) { _ = try await credential.refresh() }
            #expect(refresh?.code == .invalidEndpoint)
            let userinfo = await #expect(throws: ProviderError.self) { _ = try await credential.userInfo() }
            #expect(userinfo?.code == .invalidEndpoint)
            // The tokens were never spent: still there, still good once the provider is fixed.
            #expect(try await credential.token == (try await signedIn.token))
            dev.faults.clear()
            let fixed = OpenIDProvider(configuration: harness.provider.configuration, transport: transport)
            #expect(try await harness.store.credential(signedIn.id, provider: fixed).refresh().accessToken != nil)
        }
    }

    @Test("a stray request to the redirect listener gets a 400 and does not end the sign-in")
    func strayRedirect() async throws {
        try await withHarness(.dev) { harness in
            let stray = StrayAnswer()
            let credential = try await harness.provider.signIn(
                .browser(listener: NIOLoopbackRedirectListener(), timeout: .seconds(20)) { url in
                    let redirect = try? #require(
                        URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first {
                            $0.name == "redirect_uri"
                        }?.value)
                    Task {
                        // Another local program (or a web page) guesses the listener's address.
                        var request = HTTPClientRequest(url: "\(redirect ?? "")?state=junk&code=forged")
                        request.method = .GET
                        let response = try await Browser.client.execute(request, timeout: .seconds(10))
                        let body = try await response.body.collect(upTo: 4096)
                        stray.value.withLockedValue { $0 = (response.status.code, String(buffer: body)) }
                        try await Browser.signIn(at: url, harness: harness)
                    }
                },
                into: harness.store)
            #expect(try await credential.stored().metadata.preferredUsername == "alice")
            let answer = try #require(stray.value.withLockedValue { $0 })
            #expect(answer.status == 400)
            #expect(answer.body.contains("ignored"))
        }
    }

    @Test("RFC 9207: an answer that names no issuer, or another one, is refused before its error is believed")
    func issuerOfTheAnswer() async throws {
        try await withHarness(.dev) { harness in
            let redirect = try #require(URL(string: "http://127.0.0.1:9/callback"))
            let request = try await harness.provider.authorizationRequest(redirectURI: redirect)
            let issuer = harness.provider.configuration.issuer.absoluteString
            func answer(_ query: String) async -> ProviderError? {
                do {
                    let url = try #require(URL(string: "http://127.0.0.1:9/callback?state=\(request.state)&\(query)"))
                    _ = try await harness.provider.completeAuthorization(request, callbackURL: url)
                    return nil
                } catch let error as ProviderError {
                    return error
                } catch {
                    return ProviderError(.invalidResponse, reason: "\(error)")
                }
            }
            // The development provider advertises authorization_response_iss_parameter_supported.
            let missing = await answer("code=forged")
            #expect(missing?.code == .invalidResponse)
            #expect(missing?.reason.contains("RFC 9207") == true)
            let mixedUp = await answer("error=access_denied&iss=https%3A%2F%2Fattacker.example")
            #expect(mixedUp?.code == .invalidResponse, "another issuer's error is not believed")
            let refused = await answer(
                "error=access_denied&iss=\(issuer.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
            #expect(refused?.oauthError == .accessDenied)
        }
    }

    @Test("the password grant is off unless asked for: nothing is sent")
    func passwordGrantOptIn() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let strict = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(issuer: dev.issuer, clientID: "latchkey-cli"),
                transport: transport)
            dev.faults.resetCounters()
            let error = await #expect(throws: ProviderError.self) {
                _ = try await strict.signIn(
                    .password(username: "alice", password: "alice-password"), into: harness.store)
            }
            #expect(error?.code == .unsupported)
            #expect(error?.description.contains("RFC 9700") == true)
            #expect(error?.description.contains("alice-password") == false)
            #expect(dev.faults.count("token.password") == 0)
            #expect(try await harness.store.all().isEmpty)
        }
    }

    @Test("a sign-in whose ID token is rejected revokes the grant it was issued; nothing is stored")
    func rejectedIDTokenRevokesTheGrant() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            // The provider signs with RS256 and ES256; this client accepts neither.
            let strict = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli", idTokenAlgorithms: [.ps256],
                    allowsPasswordGrant: true),
                transport: transport)
            dev.faults.resetCounters()
            let error = await #expect(throws: ProviderError.self) {
                _ = try await strict.signIn(
                    .password(username: "alice", password: "alice-password"), into: harness.store)
            }
            #expect(error?.code == .idTokenRejected)
            #expect(dev.faults.count("token.password") == 1)
            #expect(dev.faults.count("revocation") == 1)
            #expect(await dev.liveGrants(of: "alice") == 0, "the grant it was given is revoked")
            #expect(try await harness.store.all().isEmpty)
        }
    }
}

/// What the stray request got back.
final class StrayAnswer: Sendable {
    let value = NIOLockedValueBox<(status: UInt, body: String)?>(nil)
}
