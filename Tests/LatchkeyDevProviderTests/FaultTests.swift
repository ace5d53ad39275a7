import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import NIOCore
import NIOHTTP1
import Testing

@Suite("Dev provider: fault injection and counters")
struct FaultTests {
    @Test("a forced 5xx answers with Retry-After and an OAuth error body, for a limited count; a 403 with a page")
    func forcedStatus() async throws {
        try await withProvider { client in
            client.provider.faults.set(DevProviderFault(status: 503, retryAfter: 2, remaining: 2), for: .revocation)
            for _ in 0..<2 {
                let answer = try await client.revoke("x")
                #expect(answer.status == 503)
                #expect(answer.header("Retry-After") == "2")
                #expect(answer["error"] == "temporarily_unavailable")
            }
            let code1 = try await client.revoke("x").status

            #expect(code1 == 200)
            #expect(client.provider.faults.count(.revocation) == 3)
            // Any other status is what stands in the way answering: a page, not OAuth JSON.
            client.provider.faults.set(DevProviderFault(status: 403, remaining: 1), for: .revocation)
            let blocked = try await client.revoke("x")
            #expect(blocked.status == 403)
            #expect(blocked.header("Content-Type")?.hasPrefix("text/html") == true)
        }
    }

    @Test("added latency delays the answer")
    func latency() async throws {
        try await withProvider { client in
            client.provider.faults.set(.latency(milliseconds: 300), for: .discovery)
            let start = ContinuousClock.now
            let code2 = try await client.get(client.url(.discovery)).status

            #expect(code2 == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(300))
        }
    }

    @Test("a dropped connection gives the client no answer at all")
    func dropped() async throws {
        try await withProvider { client in
            client.provider.faults.set(.dropConnection, for: .token)
            await #expect(throws: (any Error).self) { _ = try await client.signIn() }
            client.provider.faults.clear(.token)
            let code3 = try await client.signIn().status

            #expect(code3 == 200)
        }
    }

    @Test("malformed and oversized bodies")
    func bodies() async throws {
        try await withProvider { client in
            client.provider.faults.set(.malformedBody, for: .token)
            let malformed = try await client.signIn()
            #expect(malformed.status == 200)
            #expect((try? JSONSerialization.jsonObject(with: malformed.body)) == nil)
            client.provider.faults.set(.oversizedBody(bytes: 10_000_000), for: .token)
            let oversized = try await client.signIn()
            #expect(oversized.body.count == 10_000_000)
        }
    }

    @Test("offline refuses every endpoint but the admin one, which brings it back")
    func offline() async throws {
        try await withProvider { client in
            let admin = client.provider.issuer.absoluteString + "/admin"
            var request = HTTPClientRequest(url: admin + "/offline")
            request.method = .PUT
            request.body = .bytes(.init(string: #"{"offline": true}"#))
            let code4 = try await client.execute(request).status

            #expect(code4 == 200)
            #expect(client.provider.faults.isOffline)
            await #expect(throws: (any Error).self) { _ = try await client.get(client.url(.discovery)) }
            await #expect(throws: (any Error).self) { _ = try await client.signIn() }
            let counters = try await client.get(admin + "/counters")
            #expect(counters.json["discovery"] as? Int == 1)
            #expect(counters.json["token"] as? Int == 1)

            request.body = .bytes(.init(string: #"{"offline": false}"#))
            let code5 = try await client.execute(request).status

            #expect(code5 == 200)
            let code6 = try await client.get(client.url(.discovery)).status

            #expect(code6 == 200)
        }
    }

    @Test("faults can be set and cleared over the admin endpoint, for one endpoint or all")
    func adminFaults() async throws {
        try await withProvider { client in
            let admin = client.provider.issuer.absoluteString + "/admin"
            var put = HTTPClientRequest(url: admin + "/faults/all")
            put.method = .PUT
            put.body = .bytes(.init(string: #"{"status": 500}"#))
            let code7 = try await client.execute(put).status

            #expect(code7 == 200)
            let code8 = try await client.get(client.url(.jwks)).status

            #expect(code8 == 500)
            let code9 = try await client.signIn().status

            #expect(code9 == 500)

            var clear = HTTPClientRequest(url: admin + "/faults")
            clear.method = .DELETE
            let code10 = try await client.execute(clear).status

            #expect(code10 == 200)
            let code11 = try await client.get(client.url(.jwks)).status

            #expect(code11 == 200)

            put = HTTPClientRequest(url: admin + "/faults/nowhere")
            put.method = .PUT
            put.body = .bytes(.init(string: #"{"status": 500}"#))
            let code12 = try await client.execute(put).status

            #expect(code12 == 404)
        }
    }

    @Test("counters count requests per endpoint and per grant type; 50 concurrent refreshes count 50")
    func counters() async throws {
        try await withProvider { client in
            let tokens = try await client.signIn()
            client.provider.faults.resetCounters()
            var configuration = DevProviderConfiguration.default
            configuration.rotateRefreshTokens = false
            let refresh = try #require(tokens["refresh_token"])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<50 { group.addTask { _ = try await client.refresh(refresh) } }
                try await group.waitForAll()
            }
            #expect(client.provider.faults.count("token.refresh_token") == 50)
            #expect(client.provider.faults.count(.token) == 50)
            #expect(client.provider.faults.count(.revocation) == 0)
        }
    }

    @Test("the admin endpoints need the run's token and a Host of their own: a web page cannot drive them")
    func adminGuard() async throws {
        try await withProvider { client throws in
            let admin = client.provider.issuer.absoluteString + "/admin/rotate-keys"
            @Sendable func post(headers: [(String, String)], admin token: Bool) async throws -> Int {
                var request = HTTPClientRequest(url: admin)
                request.method = .POST
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                request.body = .bytes(ByteBuffer(string: "{}"))
                return try await client.execute(request, admin: token).status
            }
            // What a page's simple cross-origin POST looks like: text/plain, no Authorization.
            #expect(try await post(headers: [("Content-Type", "text/plain")], admin: false) == 401)
            #expect(
                try await post(headers: [("Authorization", "Bearer not-the-token-of-this-run")], admin: false) == 401)
            // DNS rebinding: the page's own name in Host, even with the token (which it cannot have).
            #expect(try await post(headers: [("Host", "attacker.example")], admin: true) == 403)
            #expect(try await post(headers: [], admin: true) == 200)
        }
    }
}
