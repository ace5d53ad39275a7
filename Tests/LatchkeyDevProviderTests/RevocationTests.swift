import Foundation
import LatchkeyDevProvider
import Testing

@Suite("Dev provider: revocation, introspection, userinfo")
struct RevocationTests {
    @Test("revoking an unknown token answers 200; a missing token parameter is invalid_request")
    func unknownToken() async throws {
        try await withProvider { client in
            let answer = try await client.revoke("never-issued")
            #expect(answer.status == 200)
            let missing = try await client.post(.revocation, [("client_id", Client.publicID)])
            #expect(missing.status == 400)
            #expect(missing["error"] == "invalid_request")
            let unauthenticated = try await client.post(.revocation, [("token", "x")])
            #expect(unauthenticated.status == 401)
        }
    }

    @Test("revoking the access token leaves the refresh token and device secret usable")
    func revokeAccessToken() async throws {
        try await withProvider { client in
            let tokens = try await client.signIn()
            let access = try #require(tokens["access_token"])
            let refresh = try #require(tokens["refresh_token"])
            let secret = try #require(tokens["device_secret"])
            #expect(try await client.revoke(access, hint: "access_token").status == 200)
            #expect(try await client.isActive(access) == false)
            #expect(try await client.isActive(refresh))
            #expect(try await client.isActive(secret))
            let refreshed = try await client.refresh(refresh)
            #expect(refreshed.status == 200)
            #expect(try await client.isActive(try #require(refreshed["access_token"])))
        }
    }

    @Test("revoking the refresh token also revokes the access tokens of its grant")
    func revokeRefreshToken() async throws {
        try await withProvider { client in
            let tokens = try await client.signIn()
            let access = try #require(tokens["access_token"])
            let refresh = try #require(tokens["refresh_token"])
            let other = try await client.signIn()
            // The wrong hint is only a hint.
            #expect(try await client.revoke(refresh, hint: "access_token").status == 200)
            #expect(try await client.isActive(refresh) == false)
            #expect(try await client.isActive(access) == false)
            #expect(try await client.refresh(refresh)["error"] == "invalid_grant")
            #expect(try await client.isActive(try #require(other["access_token"])))
        }
    }

    @Test("a device secret can be revoked on its own")
    func revokeDeviceSecret() async throws {
        try await withProvider { client in
            let tokens = try await client.signIn()
            let secret = try #require(tokens["device_secret"])
            #expect(try await client.revoke(secret, hint: "device_secret").status == 200)
            #expect(try await client.isActive(secret) == false)
            #expect(try await client.isActive(try #require(tokens["access_token"])))
        }
    }

    @Test("a client cannot revoke another client's token")
    func otherClient() async throws {
        try await withProvider { client in
            let access = try #require(try await client.signIn()["access_token"])
            let answer = try await client.revoke(access, client: Client.confidentialID)
            #expect(answer.status == 400)
            #expect(try await client.isActive(access))
        }
    }

    @Test("introspection is for authenticated clients and describes active tokens")
    func introspection() async throws {
        try await withProvider { client in
            let access = try #require(try await client.signIn()["access_token"])
            let publicClient = try await client.post(
                .introspection, [("token", access), ("client_id", Client.publicID)])
            #expect(publicClient.status == 401)
            #expect(publicClient["error"] == "invalid_client")
            let answer = try await client.post(.introspection, [("token", access)], headers: [Client.basic])
            #expect(answer.json["active"] as? Bool == true)
            #expect(answer["client_id"] == Client.publicID)
            #expect(answer["username"] == "alice")
            #expect(answer["token_type"] == "Bearer")
            #expect(answer.json["exp"] is Int)
            let unknown = try await client.post(.introspection, [("token", "nothing")], headers: [Client.basic])
            #expect(unknown.json as NSDictionary == ["active": false] as NSDictionary)
        }
    }

    @Test("userinfo answers claims for a valid bearer token and 401 with a Bearer challenge otherwise")
    func userinfo() async throws {
        try await withProvider { client in
            let access = try #require(try await client.signIn("bob")["access_token"])
            let answer = try await client.get(client.url(.userinfo), headers: [("Authorization", "Bearer \(access)")])
            #expect(answer.status == 200)
            #expect(answer["sub"] == "bob")
            #expect(answer["email"] == "bob@example.com")
            #expect(answer["name"] == "Bob Example")

            let missing = try await client.get(client.url(.userinfo))
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            #expect(missing.header("WWW-Authenticate")?.contains("error=") == false)

            _ = try await client.revoke(access)
            let revoked = try await client.get(client.url(.userinfo), headers: [("Authorization", "Bearer \(access)")])
            #expect(revoked.status == 401)
            #expect(revoked.header("WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
        }
    }
}
