import Foundation
import JWTKit
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

@Suite("Dev provider: discovery and keys")
struct DiscoveryTests {
    @Test("discovery and RFC 8414 metadata name every endpoint and the custom global sign-out key")
    func discovery() async throws {
        try await withProvider { client in
            for endpoint in [DevProviderEndpoint.discovery, .metadata] {
                let answer = try await client.get(client.url(endpoint))
                #expect(answer.status == 200)
                #expect(answer.header("Content-Type") == "application/json")
                let json = answer.json
                #expect(json["issuer"] as? String == client.provider.issuer.absoluteString)
                #expect(json["token_endpoint"] as? String == client.url(.token))
                #expect(json["revocation_endpoint"] as? String == client.url(.revocation))
                #expect(json["end_session_endpoint"] as? String == client.url(.endSession))
                #expect(json["device_authorization_endpoint"] as? String == client.url(.deviceAuthorization))
                #expect(json[DevProvider.globalSignOutDiscoveryKey] as? String == client.url(.globalSignOut))
                #expect(json["code_challenge_methods_supported"] as? [String] == ["S256"])
                #expect((json["id_token_signing_alg_values_supported"] as? [String])?.contains("ES256") == true)
            }
        }
    }

    @Test("the metadata and the key set may be kept for the configured max-age, 60 seconds by default")
    func documentMaxAge() async throws {
        for (configured, expected) in [(nil, "public, max-age=60"), (3_600, "public, max-age=3600")] {
            var configuration = DevProviderConfiguration.default
            if let configured { configuration.documentMaxAge = configured }
            try await withProvider(configuration) { client throws in
                for endpoint in [DevProviderEndpoint.discovery, .metadata, .jwks] {
                    #expect(try await client.get(client.url(endpoint)).header("Cache-Control") == expected)
                }
            }
        }
    }

    @Test("the JWKS holds an RS256 and an ES256 key, and ID tokens verify against it")
    func jwks() async throws {
        try await withProvider { client in
            let answer = try await client.get(client.url(.jwks))
            #expect(answer.status == 200)
            let keys = try #require(answer.json["keys"] as? [[String: String]])
            #expect(Set(keys.compactMap { $0["alg"] }) == ["RS256", "ES256"])
            #expect(keys.allSatisfy { $0["kid"] != nil && $0["use"] == "sig" })

            let idToken = try #require(try await client.signIn()["id_token"])
            let collection = try await JWTKeyCollection().add(jwksJSON: answer.text)
            let claims = try await collection.verify(idToken, as: AnyClaims.self)
            #expect(claims.values["sub"] == .string("alice"))
        }
    }

    @Test("ES256 ID tokens for a client registered for them")
    func es256Client() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.clients[0].idTokenSigningAlgorithm = "ES256"
        try await withProvider(configuration) { client in
            let idToken = try #require(try await client.signIn()["id_token"])
            #expect(jwtParts(idToken).header["alg"] as? String == "ES256")
            let jwks = try await client.get(client.url(.jwks)).text
            _ = try await JWTKeyCollection().add(jwksJSON: jwks).verify(idToken, as: AnyClaims.self)
        }
    }

    @Test("after a key rotation new tokens use the new key and the old key stays for the grace period")
    func rotation() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.keyGracePeriod = 60
        let clock = TestClock()
        try await withProvider(configuration, clock: clock) { client in
            let before = try #require(try await client.signIn()["id_token"])
            let oldKid = try #require(jwtParts(before).header["kid"] as? String)
            try await client.provider.rotateKeys()
            let after = try #require(try await client.signIn()["id_token"])
            let newKid = try #require(jwtParts(after).header["kid"] as? String)
            #expect(newKid != oldKid)
            var kids = try await jwksKids(client)
            #expect(kids.contains(oldKid) && kids.contains(newKid))
            #expect(kids.count == 4)
            _ = try await JWTKeyCollection().add(jwksJSON: client.get(client.url(.jwks)).text)
                .verify(before, as: AnyClaims.self)

            clock.advance(61)
            // Over the admin endpoint this time.
            let rotated = try await client.post(client.provider.issuer.absoluteString + "/admin/rotate-keys", form: [])
            #expect(rotated.status == 200)
            kids = try await jwksKids(client)
            #expect(!kids.contains(oldKid))
            #expect(kids.contains(newKid))
        }
    }

    func jwksKids(_ client: Client) async throws -> Set<String> {
        let keys = try await client.get(client.url(.jwks)).json["keys"] as? [[String: String]] ?? []
        return Set(keys.compactMap { $0["kid"] })
    }

    @Test("a configuration file replaces the default users and clients")
    func configurationFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dev-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(
            #"""
            {"users": [{"username": "carol", "password": "pw", "name": "Carol", "email": "carol@example.com"}],
             "clients": [{"clientID": "app", "redirectURIs": ["http://127.0.0.1/callback"],
                          "grantTypes": ["password", "refresh_token"], "scopes": ["openid", "offline_access"]}],
             "accessTokenLifetime": 7}
            """#.utf8
        ).write(to: file)
        let configuration = try DevProviderConfiguration.load(from: file)
        #expect(configuration.accessTokenLifetime == 7)
        #expect(configuration.rotateRefreshTokens)
        try await withProvider(configuration) { client in
            let answer = try await client.post(
                .token,
                [
                    ("grant_type", "password"), ("username", "carol"), ("password", "pw"), ("client_id", "app"),
                    ("scope", "openid offline_access"),
                ])
            #expect(answer.status == 200)
            #expect(answer.json["expires_in"] as? Int == 7)
            #expect(try await client.signIn("alice").status == 401)  // latchkey-cli is not registered here
        }
    }
}

/// Any claims, for verifying signatures in tests.
struct AnyClaims: JWTPayload {
    enum Value: Codable, Equatable {
        case string(String)
        case number(Double)
        case other
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else {
                self = .other
            }
        }
        func encode(to encoder: any Encoder) throws {}
    }

    var values: [String: Value]

    init(from decoder: any Decoder) throws { values = try decoder.singleValueContainer().decode([String: Value].self) }
    func encode(to encoder: any Encoder) throws {}
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
