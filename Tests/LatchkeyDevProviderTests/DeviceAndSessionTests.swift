import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

@Suite("Dev provider: device grant, sessions, global sign-out")
struct DeviceAndSessionTests {
    func startDevice(_ client: Client) async throws -> Answer {
        try await client.post(
            .deviceAuthorization, [("client_id", Client.publicID), ("scope", "openid profile offline_access")])
    }

    func poll(_ client: Client, _ deviceCode: String) async throws -> Answer {
        try await client.post(
            .token,
            [
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode),
                ("client_id", Client.publicID),
            ])
    }

    @Test("device grant: pending, slow_down, approval on the user-code page, tokens once")
    func deviceFlow() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let started = try await startDevice(client)
            #expect(started.status == 200)
            let deviceCode = try #require(started["device_code"])
            let userCode = try #require(started["user_code"])
            #expect(started["verification_uri"] == client.url(.deviceVerification))
            #expect(started["verification_uri_complete"]?.contains(userCode) == true)
            #expect(started.json["interval"] as? Int == 5)

            #expect(try await poll(client, deviceCode)["error"] == "authorization_pending")
            let fast = try await poll(client, deviceCode)
            #expect(fast["error"] == "slow_down")
            #expect(fast.status == 400)

            let page = try await client.get(try #require(started["verification_uri_complete"]))
            #expect(page.status == 200)
            #expect(page.text.contains(userCode))
            let wrong = try await client.post(
                .deviceVerification,
                [("user_code", userCode), ("username", "alice"), ("password", "x"), ("action", "approve")])
            #expect(wrong.status == 401)
            // Codes are read without case or the dash.
            let approved = try await client.post(
                .deviceVerification,
                [
                    ("user_code", userCode.lowercased().replacingOccurrences(of: "-", with: "")), ("username", "alice"),
                    ("password", "alice-password"), ("action", "approve"),
                ])
            #expect(approved.status == 200)

            clock.advance(11)
            let tokens = try await poll(client, deviceCode)
            #expect(tokens.status == 200)
            #expect(tokens["access_token"] != nil)
            #expect(jwtParts(try #require(tokens["id_token"])).claims["sub"] as? String == "alice")
            clock.advance(11)
            #expect(try await poll(client, deviceCode)["error"] == "invalid_grant")
        }
    }

    @Test("device grant: denial is access_denied, expiry is expired_token")
    func deviceDeniedAndExpired() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let denied = try await startDevice(client)
            _ = try await client.post(
                .deviceVerification, [("user_code", try #require(denied["user_code"])), ("action", "deny")])
            #expect(try await poll(client, try #require(denied["device_code"]))["error"] == "access_denied")

            let expiring = try await startDevice(client)
            clock.advance(601)
            #expect(try await poll(client, try #require(expiring["device_code"]))["error"] == "expired_token")
        }
    }

    @Test("end_session with id_token_hint ends that session only, revokes its tokens, redirects with state")
    func endSession() async throws {
        try await withProvider { client in
            let deviceA = try await client.signIn()
            let deviceB = try await client.signIn()
            var components = URLComponents(string: client.url(.endSession))!
            components.queryItems = [
                URLQueryItem(name: "id_token_hint", value: deviceA["id_token"]),
                URLQueryItem(name: "post_logout_redirect_uri", value: "http://127.0.0.1:4000/logged-out"),
                URLQueryItem(name: "state", value: "bye"),
            ]
            let answer = try await client.get(components.string!)
            #expect(answer.status == 302)
            #expect(answer.header("Location")?.hasPrefix("http://127.0.0.1:4000/logged-out?") == true)
            #expect(answer.locationQuery["state"] == "bye")
            for token in [deviceA["access_token"], deviceA["refresh_token"], deviceA["device_secret"]] {
                #expect(try await client.isActive(try #require(token)) == false)
            }
            #expect(try await client.isActive(try #require(deviceB["access_token"])))
            #expect(try await client.refresh(try #require(deviceB["refresh_token"])).status == 200)

            // Without a redirect URI the answer is a page, still without a browser round trip.
            let deviceC = try await client.signIn()
            let page = try await client.post(.endSession, [("id_token_hint", try #require(deviceC["id_token"]))])
            #expect(page.status == 200)
            #expect(try await client.isActive(try #require(deviceC["access_token"])) == false)
        }
    }

    @Test("end_session refuses an unregistered post_logout_redirect_uri and a forged hint; asks without a hint")
    func endSessionErrors() async throws {
        try await withProvider { client in
            let tokens = try await client.signIn()
            let idToken = try #require(tokens["id_token"])
            let unregistered = try await client.post(
                .endSession, [("id_token_hint", idToken), ("post_logout_redirect_uri", "http://evil.example/")])
            #expect(unregistered.status == 400)
            #expect(unregistered.header("Location") == nil)
            let parts = idToken.split(separator: ".")
            let forged = "\(parts[0]).\(parts[1]).AAAA"
            #expect(try await client.post(.endSession, [("id_token_hint", forged)]).status == 400)
            let mismatch = try await client.post(
                .endSession, [("id_token_hint", idToken), ("client_id", Client.confidentialID)])
            #expect(mismatch.status == 400)
            #expect(try await client.isActive(try #require(tokens["access_token"])))

            let confirm = try await client.get(client.url(.endSession))
            #expect(confirm.status == 200)
            #expect(confirm.text.contains(#"name="confirm""#))
        }
    }

    @Test("global sign-out revokes every grant and session of the user on every device, and no one else's")
    func globalSignOut() async throws {
        try await withProvider { client in
            let deviceA = try await client.signIn()
            let deviceB = try await client.signIn()
            let bob = try await client.signIn("bob")
            let unauthenticated = try await client.post(.globalSignOut, [])
            #expect(unauthenticated.status == 401)
            let answer = try await client.post(
                .globalSignOut, [], headers: [("Authorization", "Bearer \(try #require(deviceA["access_token"]))")])
            #expect(answer.status == 200)
            #expect(answer.json["sessions_ended"] as? Int == 2)
            for token in [
                deviceA["access_token"], deviceB["access_token"], deviceB["refresh_token"], deviceB["device_secret"],
            ] {
                #expect(try await client.isActive(try #require(token)) == false)
            }
            #expect(try await client.refresh(try #require(deviceB["refresh_token"]))["error"] == "invalid_grant")
            #expect(try await client.isActive(try #require(bob["access_token"])))
        }
    }
}
