import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

@Suite("Dev provider: token endpoint")
struct TokenEndpointTests {
    @Test("a password grant answers RFC 6749 §5.1 with JWT access token, ID token, refresh token and device secret")
    func passwordGrant() async throws {
        try await withProvider { client in
            let answer = try await client.signIn()
            #expect(answer.status == 200)
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(answer.header("Pragma") == "no-cache")
            #expect(answer["token_type"] == "Bearer")
            #expect(answer.json["expires_in"] as? Int == 300)
            #expect(answer["scope"] == "openid profile email offline_access device_sso")
            #expect(answer["refresh_token"] != nil)
            #expect(answer["device_secret"] != nil)

            let access = jwtParts(try #require(answer["access_token"]))
            #expect(access.header["typ"] as? String == "at+jwt")
            #expect(access.claims["client_id"] as? String == Client.publicID)
            #expect(access.claims["iss"] as? String == client.provider.issuer.absoluteString)
            for claim in ["sub", "aud", "exp", "iat", "jti", "scope"] {
                #expect(access.claims[claim] != nil, "\(claim)")
            }

            let id = jwtParts(try #require(answer["id_token"])).claims
            #expect(id["aud"] as? String == Client.publicID)
            #expect(id["sub"] as? String == "alice")
            #expect(id["preferred_username"] as? String == "alice")
            #expect(id["name"] as? String == "Alice Example")
            #expect(id["email"] as? String == "alice@example.com")
            for claim in ["iss", "exp", "iat", "auth_time", "sid", "at_hash"] { #expect(id[claim] != nil, "\(claim)") }
        }
    }

    @Test("claims follow the scopes; no refresh token without offline_access; no device secret without device_sso")
    func scopes() async throws {
        try await withProvider { client in
            let answer = try await client.signIn(scope: "openid")
            #expect(answer.status == 200)
            #expect(answer["refresh_token"] == nil)
            #expect(answer["device_secret"] == nil)
            let id = jwtParts(try #require(answer["id_token"])).claims
            #expect(id["email"] == nil)
            #expect(id["name"] == nil)
            let refused = try await client.signIn(scope: "openid admin")
            #expect(refused.status == 400)
            #expect(refused["error"] == "invalid_scope")
        }
    }

    @Test("every sign-in gets its own session id")
    func sessions() async throws {
        try await withProvider { client in
            let first = jwtParts(try #require(try await client.signIn()["id_token"])).claims["sid"] as? String
            let second = jwtParts(try #require(try await client.signIn()["id_token"])).claims["sid"] as? String
            #expect(first != nil && second != nil && first != second)
        }
    }

    @Test("client authentication: basic and post accepted; errors are 401 with WWW-Authenticate")
    func clientAuthentication() async throws {
        try await withProvider { client in
            let form = [
                ("grant_type", "password"), ("username", "bob"), ("password", "bob-password"), ("scope", "openid"),
            ]
            #expect(try await client.post(.token, form, headers: [Client.basic]).status == 200)
            let post = form + [("client_id", Client.confidentialID), ("client_secret", Client.secret)]
            #expect(try await client.post(.token, post).status == 200)

            let wrongSecret = form + [("client_id", Client.confidentialID), ("client_secret", "nope")]
            for answer in [
                try await client.post(.token, wrongSecret),
                try await client.post(
                    .token, form,
                    headers: [
                        ("Authorization", "Basic " + Data("latchkey-confidential:nope".utf8).base64EncodedString())
                    ]),
                try await client.post(.token, form + [("client_id", "nobody")]),
                try await client.post(.token, form + [("client_id", Client.confidentialID)]),
                try await client.post(.token, form),
            ] {
                #expect(answer.status == 401)
                #expect(answer["error"] == "invalid_client")
                #expect(answer.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
                #expect(answer.header("Cache-Control") == "no-store")
                #expect(answer["error_description"] != nil)
            }
            let twoMethods = try await client.post(
                .token, form + [("client_secret", Client.secret)], headers: [Client.basic])
            #expect(twoMethods.status == 400)
            #expect(twoMethods["error"] == "invalid_request")
        }
    }

    @Test("request errors are RFC 6749 §5.2 JSON with status 400")
    func requestErrors() async throws {
        try await withProvider { client in
            let cases: [([(String, String)], String)] = [
                ([("client_id", Client.publicID)], "invalid_request"),
                ([("client_id", Client.publicID), ("grant_type", "client_credentials")], "unsupported_grant_type"),
                (
                    [
                        ("client_id", Client.publicID), ("grant_type", "password"), ("username", "alice"),
                        ("password", "bad"),
                    ],
                    "invalid_grant"
                ),
                (
                    [
                        ("client_id", Client.publicID), ("grant_type", "password"), ("grant_type", "password"),
                        ("username", "alice"), ("password", "alice-password"),
                    ],
                    "invalid_request"
                ),
                (
                    [("client_id", Client.publicID), ("grant_type", "refresh_token"), ("refresh_token", "unknown")],
                    "invalid_grant"
                ),
            ]
            for (form, error) in cases {
                let answer = try await client.post(.token, form)
                #expect(answer.status == 400, "\(form)")
                #expect(answer["error"] == error, "\(form)")
                #expect(answer.header("Content-Type") == "application/json")
                #expect(answer.header("Cache-Control") == "no-store")
            }
        }
    }

    @Test("a raw space in a form is a space; a malformed percent escape is a 400, and the server keeps serving")
    func malformedFormEncoding() async throws {
        try await withProvider { client in
            let token = try #require(URL(string: client.url(.token))).path
            let authorize = try #require(URL(string: client.url(.authorization))).path
            func post(_ body: String) -> String {
                "POST \(token) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            // oidc-agent sends its scopes with a raw space.
            let spaced = try await client.raw(
                post(
                    "grant_type=password&username=alice&password=alice-password&client_id=latchkey-cli&scope=openid profile"
                ))
            #expect(spaced.status.hasPrefix("HTTP/1.1 200"), "\(spaced.status)")
            #expect(spaced.body.contains("access_token"))
            for request in [
                "GET \(authorize)?client_id=%zz&response_type=code HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                post("grant_type=password&username=%zz&password=x&client_id=latchkey-cli"),
                post("grant_type=password&username=alice%&client_id=latchkey-cli"),
                post("grant_type=password&username=%FF&client_id=latchkey-cli"),
            ] {
                let answer = try await client.raw(request)
                #expect(answer.status.hasPrefix("HTTP/1.1 400"), "\(answer.status)")
                #expect(answer.body.contains("invalid_request"))
            }
            #expect(try await client.signIn().status == 200)
        }
    }

    @Test("refresh rotates the refresh token; replaying the old one revokes the whole grant")
    func rotationAndReplay() async throws {
        try await withProvider { client in
            let first = try await client.signIn()
            let oldRefresh = try #require(first["refresh_token"])
            let refreshed = try await client.refresh(oldRefresh)
            #expect(refreshed.status == 200)
            let newRefresh = try #require(refreshed["refresh_token"])
            let newAccess = try #require(refreshed["access_token"])
            #expect(newRefresh != oldRefresh)
            #expect(refreshed["id_token"] != nil)
            #expect(try await client.isActive(newAccess))

            let replay = try await client.refresh(oldRefresh)
            #expect(replay.status == 400)
            #expect(replay["error"] == "invalid_grant")
            #expect(try await client.isActive(newAccess) == false)
            #expect(try await client.isActive(newRefresh) == false)
            #expect(try await client.refresh(newRefresh)["error"] == "invalid_grant")
            #expect(client.provider.faults.count("token.refresh_token") == 3)
        }
    }

    @Test("with rotation off, the same refresh token keeps working")
    func noRotation() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.rotateRefreshTokens = false
        try await withProvider(configuration) { client in
            let refreshToken = try #require(try await client.signIn()["refresh_token"])
            let again = try await client.refresh(refreshToken)
            #expect(again["refresh_token"] == refreshToken)
            #expect(try await client.refresh(refreshToken).status == 200)
        }
    }

    @Test("a refresh may narrow the scopes but never widen them")
    func refreshScopes() async throws {
        try await withProvider { client in
            let refreshToken = try #require(try await client.signIn(scope: "openid offline_access")["refresh_token"])
            let widened = try await client.post(
                .token,
                [
                    ("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", Client.publicID),
                    ("scope", "openid offline_access email"),
                ])
            #expect(widened["error"] == "invalid_scope")
        }
    }

    @Test("access tokens expire after the configured lifetime")
    func accessTokenLifetime() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.accessTokenLifetime = 2
        let clock = TestClock()
        try await withProvider(configuration, clock: clock) { client in
            let answer = try await client.signIn()
            #expect(answer.json["expires_in"] as? Int == 2)
            let access = try #require(answer["access_token"])
            #expect(try await client.isActive(access))
            clock.advance(3)
            #expect(try await client.isActive(access) == false)
            #expect(
                try await client.get(client.url(.userinfo), headers: [("Authorization", "Bearer \(access)")]).status
                    == 401)
            #expect(try await client.refresh(try #require(answer["refresh_token"])).status == 200)
        }
    }
}
