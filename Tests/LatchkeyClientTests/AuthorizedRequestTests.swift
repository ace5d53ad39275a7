import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import LatchkeyURLRequest
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A credential's access token on an application's own requests, against the development
/// provider's userinfo endpoint as the resource server (it answers RFC 6750 challenges).
@Suite("Authorized requests")
struct AuthorizedRequestTests {
    @Test("a request gets the current access token as a Bearer header")
    func authorizes() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let dev = try #require(harness.dev)
            let request = HTTPRequest(method: .get, url: dev.url(.userinfo))
            let authorized = try await credential.authorized(request)
            let token = try await credential.accessToken()
            #expect(authorized.headerFields[.authorization] == "Bearer \(token)")
            #if canImport(FoundationNetworking) || canImport(Darwin)
                let urlRequest = try await credential.authorized(URLRequest(url: dev.url(.userinfo)))
                #expect(urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer \(token)")
            #endif
        }
    }

    @Test("a token the resource server calls invalid is refreshed once for 20 callers, and each request sent again")
    func refreshesOnInvalidToken() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let dev = try #require(harness.dev)
            let request = HTTPRequest(method: .get, url: dev.url(.userinfo))
            let first = try await credential.send(request, through: transport)
            #expect(first.response.status == .ok)

            // The provider revokes the access token; the credential still holds it.
            let revoked = try #require(try await credential.token.accessToken)
            try await harness.provider.revoke(revoked, kind: .accessToken)
            dev.faults.resetCounters()
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await credential.send(request, through: transport).response.status }
                }
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses == Array(repeating: .ok, count: 20))
            #expect(dev.faults.count("token.refresh_token") == 1)
            #expect(try await credential.token.accessToken != revoked)
            // Nothing left to refresh for.
            #expect(try await credential.send(request, through: transport).response.status == .ok)
            #expect(dev.faults.count("token.refresh_token") == 1)
        }
    }

    @Test("a 401 naming another error is returned as it is; a bare 401 gets one refresh and one retry")
    func otherUnauthorizedAnswers() async throws {
        try await withHarness(.dev) { harness in
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let dev = try #require(harness.dev)
            dev.faults.set(
                DevProviderFault(status: 401, wwwAuthenticate: #"Bearer error="insufficient_scope""#), for: .userinfo)
            dev.faults.resetCounters()
            let refused = try await credential.send(
                HTTPRequest(method: .get, url: dev.url(.userinfo)), through: transport)
            #expect(refused.response.status == .unauthorized)
            #expect(dev.faults.count(.userinfo) == 1)
            #expect(dev.faults.count("token.refresh_token") == 0)

            // No error named: the token sent was not taken; it is refreshed once, tried once more.
            dev.faults.set(.status(401), for: .userinfo)
            dev.faults.resetCounters()
            let bare = try await credential.send(HTTPRequest(method: .get, url: dev.url(.userinfo)), through: transport)
            #expect(bare.response.status == .unauthorized)
            #expect(dev.faults.count(.userinfo) == 2)
            #expect(dev.faults.count("token.refresh_token") == 1)
        }
    }

    @Test("signing in registers the provider: a sign-out and an outbox drain need no register call")
    func signInRegisters() async throws {
        try await withHarness(.dev) { harness in
            let store = CredentialStore.inMemory()
            _ = try await harness.provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
            let dev = try #require(harness.dev)
            dev.faults.isOffline = true
            let offline = await store.signOut(.current)
            guard case .partial = offline else {
                Issue.record("an offline sign-out is partial: \(offline)")
                return
            }
            dev.faults.isOffline = false
            let report = await store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(report.revoked == 2)
            #expect(report.isClean, "\(report)")
        }
    }
}
