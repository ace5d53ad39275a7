import Foundation
import LatchkeyDevProvider
import Testing

@Suite("Dev provider: authorization endpoint")
struct AuthorizationTests {
    func authorizeURL(
        _ client: Client, clientID: String = Client.publicID, redirect: String = "http://127.0.0.1:53682/callback",
        pkce: PKCE? = PKCE(), method: String = "S256", state: String = "st-1", nonce: String = "n-1",
        prompt: String? = nil
    ) -> String {
        var items = [
            URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID),
            URLQueryItem(name: "redirect_uri", value: redirect),
            URLQueryItem(name: "scope", value: "openid profile email offline_access"),
            URLQueryItem(name: "state", value: state), URLQueryItem(name: "nonce", value: nonce),
        ]
        if let pkce {
            items.append(URLQueryItem(name: "code_challenge", value: pkce.challenge))
            items.append(URLQueryItem(name: "code_challenge_method", value: method))
        }
        // offline_access goes with prompt=consent (OpenID Connect Core §11), which the provider
        // requires as idpyoidc does; prompt=none cannot take it.
        var values = prompt.map { $0.split(separator: " ").map(String.init) } ?? []
        if !values.contains("none") { values.append("consent") }
        items.append(URLQueryItem(name: "prompt", value: values.joined(separator: " ")))
        var components = URLComponents(string: client.url(.authorization))!
        components.queryItems = items
        return components.string!
    }

    /// Submits the sign-in form the way a browser would: every field of the query plus the credentials.
    func submitForm(_ client: Client, _ url: String, username: String = "alice", password: String = "alice-password")
        async throws -> Answer
    {
        let items = URLComponents(string: url)?.queryItems ?? []
        let form = items.map { ($0.name, $0.value ?? "") } + [("username", username), ("password", password)]
        return try await client.post(.authorization, form)
    }

    func cookie(_ answer: Answer) -> String? {
        answer.header("Set-Cookie")?.split(separator: ";").first.map(String.init)
    }

    @Test("sign-in form, code with state, PKCE exchange, nonce in the ID token")
    func codeFlow() async throws {
        try await withProvider { client in
            let pkce = PKCE()
            let url = authorizeURL(client, pkce: pkce)
            let page = try await client.get(url)
            #expect(page.status == 200)
            #expect(page.text.contains(#"name="password""#))

            let wrong = try await submitForm(client, url, password: "nope")
            #expect(wrong.status == 401)
            let signedIn = try await submitForm(client, url)
            #expect(signedIn.status == 302)
            let query = signedIn.locationQuery
            #expect(query["state"] == "st-1")
            #expect(signedIn.header("Location")?.hasPrefix("http://127.0.0.1:53682/callback?") == true)
            let code = try #require(query["code"])
            #expect(cookie(signedIn)?.hasPrefix("latchkey_dev_session=") == true)

            let exchange: (String) async throws -> Answer = { verifier in
                try await client.post(
                    .token,
                    [
                        ("grant_type", "authorization_code"), ("code", code), ("client_id", Client.publicID),
                        ("redirect_uri", "http://127.0.0.1:53682/callback"), ("code_verifier", verifier),
                    ])
            }
            let tokens = try await exchange(pkce.verifier)
            #expect(tokens.status == 200)
            let id = jwtParts(try #require(tokens["id_token"])).claims
            #expect(id["nonce"] as? String == "n-1")
            #expect(id["sub"] as? String == "alice")

            // A code used twice fails and revokes what the first exchange gave.
            let again = try await exchange(pkce.verifier)
            #expect(again["error"] == "invalid_grant")
            #expect(try await client.isActive(try #require(tokens["access_token"])) == false)
        }
    }

    @Test("a wrong or missing code_verifier, or another redirect_uri, is invalid_grant")
    func pkceMismatch() async throws {
        try await withProvider { client in
            let callback = "http://127.0.0.1:53682/callback"
            let cases: [(verifier: String?, redirect: String)] = [
                (PKCE().verifier, callback), (nil, callback), ("same", "http://127.0.0.1:53682/other"),
            ]
            for testCase in cases {
                let pkce = PKCE()
                let code = try #require(
                    try await submitForm(client, authorizeURL(client, pkce: pkce)).locationQuery["code"])
                var form = [
                    ("grant_type", "authorization_code"), ("code", code), ("client_id", Client.publicID),
                    ("redirect_uri", testCase.redirect),
                ]
                if let verifier = testCase.verifier {
                    form.append(("code_verifier", verifier == "same" ? pkce.verifier : verifier))
                }
                let answer = try await client.post(.token, form)
                #expect(answer.status == 400, "\(testCase)")
                #expect(answer["error"] == "invalid_grant", "\(testCase)")
            }
        }
    }

    @Test("PKCE S256 is required for public clients; plain is refused")
    func pkceRequired() async throws {
        try await withProvider { client in
            let withoutPKCE = try await client.get(authorizeURL(client, pkce: nil))
            #expect(withoutPKCE.status == 302)
            #expect(withoutPKCE.locationQuery["error"] == "invalid_request")
            #expect(withoutPKCE.locationQuery["state"] == "st-1")
            let plain = try await client.get(authorizeURL(client, method: "plain"))
            #expect(plain.locationQuery["error"] == "invalid_request")
            // A confidential client may go without PKCE.
            let confidential = try await client.get(authorizeURL(client, clientID: Client.confidentialID, pkce: nil))
            #expect(confidential.status == 200)
        }
    }

    @Test("redirect URIs match exactly, except loopback ones on any port; errors there are shown, not redirected")
    func redirectMatching() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.clients[0].redirectURIs.append("https://app.example/callback")
        try await withProvider(configuration) { client in
            for redirect in [
                "http://127.0.0.1:1/callback", "http://127.0.0.1/callback", "http://localhost:65000/callback",
            ] {
                #expect(try await client.get(authorizeURL(client, redirect: redirect)).status == 200, "\(redirect)")
            }
            for redirect in [
                "http://127.0.0.1:1/other", "https://app.example:444/callback", "https://app.example/callback/x",
                "http://evil.example/callback",
            ] {
                let answer = try await client.get(authorizeURL(client, redirect: redirect))
                #expect(answer.status == 400, "\(redirect)")
                #expect(answer.header("Location") == nil)
            }
            #expect(try await client.get(authorizeURL(client, redirect: "https://app.example/callback")).status == 200)
            let unknownClient = try await client.get(authorizeURL(client, clientID: "nobody"))
            #expect(unknownClient.status == 400)
            #expect(unknownClient.header("Location") == nil)
        }
    }

    @Test("an SSO session signs in without the form; prompt=login forces it; prompt=none needs a session")
    func ssoSession() async throws {
        try await withProvider { client in
            let none = try await client.get(authorizeURL(client, prompt: "none"))
            #expect(none.status == 302)
            #expect(none.locationQuery["error"] == "login_required")

            let firstPKCE = PKCE()
            let signedIn = try await submitForm(client, authorizeURL(client, pkce: firstPKCE))
            let session = try #require(cookie(signedIn))
            let firstSid = try await sid(client, signedIn, firstPKCE)

            let silentPKCE = PKCE()
            let silent = try await client.get(
                authorizeURL(client, pkce: silentPKCE, state: "st-2"), headers: [("Cookie", session)])
            #expect(silent.status == 302)
            #expect(silent.locationQuery["state"] == "st-2")
            #expect(try await sid(client, silent, silentPKCE) == firstSid)

            let nonePKCE = PKCE()
            let withNone = try await client.get(
                authorizeURL(client, pkce: nonePKCE, prompt: "none"), headers: [("Cookie", session)])
            #expect(try await sid(client, withNone, nonePKCE) == firstSid)

            let forced = try await client.get(authorizeURL(client, prompt: "login"), headers: [("Cookie", session)])
            #expect(forced.status == 200)
            #expect(forced.text.contains(#"name="password""#))
        }
    }

    /// Exchanges the code of a redirect and returns the ID token's `sid`.
    func sid(_ client: Client, _ redirect: Answer, _ pkce: PKCE) async throws -> String? {
        let code = try #require(redirect.locationQuery["code"])
        let tokens = try await client.post(
            .token,
            [
                ("grant_type", "authorization_code"), ("code", code), ("client_id", Client.publicID),
                ("redirect_uri", "http://127.0.0.1:53682/callback"), ("code_verifier", pkce.verifier),
            ])
        return jwtParts(try #require(tokens["id_token"])).claims["sid"] as? String
    }
}
