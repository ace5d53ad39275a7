import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The provider's own implementation of PingAM's journey and session endpoints, driven over
/// HTTP as AM's documentation drives AM's.
@Suite("Journey endpoints")
struct JourneyEndpointTests {
    static let journeyVersion = ("Accept-API-Version", "resource=2.1, protocol=1.0")
    static let logoutVersion = ("Accept-API-Version", "resource=3.1, protocol=1.0")

    @Test("serverinfo names a random cookie each run, or the configured one")
    func serverInfo() async throws {
        try await withProvider { client in
            let answer = try await client.get(client.url(.serverInfo))
            let name = try #require(answer["cookieName"])
            #expect(name == client.provider.sessionCookieName)
            #expect(name.count == 15 && name.allSatisfy(\.isHexDigit))
            let inRealm = try await client.get(
                client.provider.issuer.absoluteString + "/json/realms/root/realms/alpha/serverinfo/*")
            #expect(inRealm["cookieName"] == name)
        }
        var configuration = DevProviderConfiguration.default
        configuration.sessionCookieName = "iPlanetDirectoryPro"
        try await withProvider(configuration) { client in
            let answer = try await client.get(client.url(.serverInfo))
            #expect(answer["cookieName"] == "iPlanetDirectoryPro")
        }
    }

    @Test("authenticate: AM's version header, a known journey, one page, and a 401 for a wrong password")
    func loginPage() async throws {
        try await withProvider { client in
            let missingVersion = try await client.postJSON(client.journey("Login"), nil)
            #expect(missingVersion.status == 400)
            let unknown = try await client.postJSON(client.journey("Nope"), nil, headers: [Self.journeyVersion])
            #expect(unknown.status == 400 && unknown["message"] == "No configuration found")

            let page = try await client.postJSON(client.journey("Login"), nil, headers: [Self.journeyVersion])
            #expect(page.status == 200)
            let callbacks = try #require(page.json["callbacks"] as? [[String: Any]])
            #expect(callbacks.map { $0["type"] as? String } == ["NameCallback", "PasswordCallback"])
            #expect(page["stage"] == "Login")

            let wrong = try await client.postJSON(
                client.journey("Login"), try Self.answer(page, ["IDToken1": "alice", "IDToken2": "wrong"]),
                headers: [Self.journeyVersion])
            #expect(wrong.status == 401)
            #expect(wrong.json["code"] as? Int == 401 && wrong["reason"] == "Unauthorized")
            #expect(wrong["message"] == "Login failure")

            // Each authId is good for one answer.
            let again = try await client.postJSON(
                client.journey("Login"), try Self.answer(page, ["IDToken1": "alice", "IDToken2": "alice-password"]),
                headers: [Self.journeyVersion])
            #expect(again.status == 401)
        }
    }

    @Test("a page must come back whole: a dropped callback is refused")
    func wholePage() async throws {
        try await withProvider { client in
            let page = try await client.postJSON(client.journey("Login"), nil, headers: [Self.journeyVersion])
            var object = page.json
            object["callbacks"] = Array((object["callbacks"] as? [[String: Any]] ?? []).prefix(1))
            let answer = try await client.postJSON(
                client.journey("Login"), try JSONSerialization.data(withJSONObject: object),
                headers: [Self.journeyVersion])
            #expect(answer.status == 400)
        }
    }

    @Test("sessions: validate by header or body, logout with version 3, logout again is refused")
    func sessions() async throws {
        try await withProvider { client in
            let token = try await client.journeySession()
            let cookie = client.provider.sessionCookieName
            let validate = client.provider.url(.sessionValidation).absoluteString
            let byHeader = try await client.postJSON(validate, nil, headers: [(cookie, token), Self.journeyVersion])
            #expect(
                byHeader.json["valid"] as? Bool == true && byHeader["uid"] == "alice" && byHeader["realm"] == "/alpha")
            let body = try JSONSerialization.data(withJSONObject: ["tokenId": token])
            #expect(
                try await client.postJSON(validate, body, headers: [Self.journeyVersion]).json["valid"] as? Bool == true
            )

            let logout = client.provider.url(.sessionLogout).absoluteString
            #expect(
                try await client.postJSON(logout, nil, headers: [(cookie, token), Self.journeyVersion]).status == 400)
            let ended = try await client.postJSON(logout, nil, headers: [(cookie, token), Self.logoutVersion])
            #expect(ended.status == 200 && ended["result"] == "Successfully logged out")
            #expect(
                try await client.postJSON(validate, body, headers: [Self.journeyVersion]).json["valid"] as? Bool
                    == false)
            let again = try await client.postJSON(logout, nil, headers: [(cookie, token), Self.logoutVersion])
            #expect(again.status == 401 && again["message"] == "Access Denied")
        }
    }

    @Test("authorize with the session header: a code for the realm's issuer, tokens that outlive the session")
    func authorizeWithSession() async throws {
        try await withProvider { client in
            let token = try await client.journeySession()
            let realm = client.provider.realmIssuer.absoluteString
            let pkce = PKCE()
            let query = Client.encode([
                ("response_type", "code"), ("client_id", Client.publicID),
                ("redirect_uri", "http://127.0.0.1/callback"),
                ("scope", "openid profile offline_access"), ("prompt", "consent"), ("state", "s-1"), ("nonce", "n-1"),
                ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"),
            ])
            let authorized = try await client.get(
                "\(realm)/authorize?\(query)", headers: [(client.provider.sessionCookieName, token)])
            #expect(authorized.status == 302)
            #expect(authorized.locationQuery["iss"] == realm && authorized.locationQuery["state"] == "s-1")
            let code = try #require(authorized.locationQuery["code"])
            let exchange = [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "http://127.0.0.1/callback"),
                ("code_verifier", pkce.verifier), ("client_id", Client.publicID),
            ]
            // The root issuer's token endpoint does not take the realm's code.
            #expect(try await client.post(.token, exchange).status == 400)
            let tokens = try await client.post("\(realm)/token", form: exchange)
            #expect(tokens.status == 200)
            let idToken = try #require(tokens["id_token"])
            #expect(jwtParts(idToken).claims["iss"] as? String == realm)
            #expect(jwtParts(idToken).claims["nonce"] as? String == "n-1")

            // Ending the session revokes none of its tokens, as in AM.
            _ = try await client.postJSON(
                client.provider.url(.sessionLogout).absoluteString, nil,
                headers: [(client.provider.sessionCookieName, token), Self.logoutVersion])
            let introspection = try await client.post(
                "\(realm)/introspect", form: [("token", try #require(tokens["access_token"]))], headers: [Client.basic])
            #expect(introspection.json["active"] as? Bool == true)

            // An ended session authorizes nothing: the sign-in page.
            let refused = try await client.get(
                "\(realm)/authorize?\(query)", headers: [(client.provider.sessionCookieName, token)])
            #expect(refused.status == 200 && refused.header("Location") == nil)
            #expect(client.provider.faults.count("authorize.session") == 2)
        }
    }

    @Test("faults apply to the session endpoints one by one, and each is counted")
    func faults() async throws {
        try await withProvider { client in
            let token = try await client.journeySession()
            let cookie = client.provider.sessionCookieName
            client.provider.faults.set(.status(503, retryAfter: 2), for: .sessionLogout)
            let validate = try await client.postJSON(
                client.provider.url(.sessionValidation).absoluteString, nil,
                headers: [(cookie, token), Self.journeyVersion])
            #expect(validate.json["valid"] as? Bool == true)
            let logout = try await client.postJSON(
                client.provider.url(.sessionLogout).absoluteString, nil, headers: [(cookie, token), Self.logoutVersion])
            #expect(logout.status == 503 && logout.header("Retry-After") == "2")
            #expect(client.provider.faults.count(.sessionLogout) == 1)
            #expect(client.provider.faults.count(.sessionValidation) == 1)
            #expect(client.provider.faults.count(.journey) == 2)
            client.provider.faults.set(.status(500), for: .serverInfo)
            #expect(try await client.get(client.url(.serverInfo)).status == 500)
        }
    }
}

extension Client {
    /// The URL that starts or continues `journey`.
    func journey(_ journey: String) -> String {
        provider.url(.journey).absoluteString + "?authIndexType=service&authIndexValue=\(journey)"
    }

    /// A JSON POST; `body` nil sends an empty body.
    func postJSON(_ url: String, _ body: Data?, headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body ?? Data()))
        return try await execute(request)
    }

    /// Walks the Login journey as alice; returns the session token.
    func journeySession() async throws -> String {
        let page = try await postJSON(journey("Login"), nil, headers: [JourneyEndpointTests.journeyVersion])
        let done = try await postJSON(
            journey("Login"),
            try JourneyEndpointTests.answer(page, ["IDToken1": "alice", "IDToken2": "alice-password"]),
            headers: [JourneyEndpointTests.journeyVersion])
        return try #require(done["tokenId"])
    }
}

extension JourneyEndpointTests {
    /// `page` sent back with the inputs named in `values` set.
    static func answer(_ page: Answer, _ values: [String: String]) throws -> Data {
        var object = page.json
        let callbacks = (object["callbacks"] as? [[String: Any]] ?? []).map { callback -> [String: Any] in
            var callback = callback
            if let inputs = callback["input"] as? [[String: Any]] {
                callback["input"] = inputs.map { input -> [String: Any] in
                    var input = input
                    if let name = input["name"] as? String, let value = values[name] { input["value"] = value }
                    return input
                }
            }
            return callback
        }
        object["callbacks"] = callbacks
        return try JSONSerialization.data(withJSONObject: object)
    }
}
