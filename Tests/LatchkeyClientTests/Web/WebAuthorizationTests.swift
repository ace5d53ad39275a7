import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// What a web sign-in asks the provider for (OpenID Connect Core §3.1.2.1 and §11).
@Suite("Web sign-in: scopes, prompt and offline access")
struct WebAuthorizationTests {
    /// The query of the authorization URL a new sign-in of `app` sends the browser to.
    static func authorizationQuery(_ app: WebApp) async throws -> [String: String] {
        let pending = try await app.sessions.beginSignIn(returnTo: "/")
        let items = URLComponents(url: pending.authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }) { first, _ in first }
    }

    @Test(
        "by default openid profile email and no prompt; offline_access brings prompt=consent; max_age and acr_values go as given"
    )
    func parameters() async throws {
        let port = try await FreePort.pick()
        let provider = try await WebSignInTests.provider(port: port)
        let plain = try await WebApp.start(
            port: port, issuer: provider.issuer, authorization: AuthorizationParameters())
        let query = try await Self.authorizationQuery(plain)
        #expect(query["scope"] == "openid profile email")
        #expect(query["prompt"] == nil)
        await plain.stop()

        let offline = try await WebApp.start(
            port: port, issuer: provider.issuer,
            authorization: AuthorizationParameters(
                scopes: ["openid", "offline_access"], prompt: ["login"], maxAge: 300,
                acrValues: ["urn:mace:incommon:iap:silver"]))
        let asked = try await Self.authorizationQuery(offline)
        #expect(asked["scope"] == "openid offline_access")
        #expect(asked["prompt"] == "login consent")
        #expect(asked["max_age"] == "300")
        #expect(asked["acr_values"] == "urn:mace:incommon:iap:silver")
        await offline.stop()
        await provider.stop()
    }

    @Test(
        "the development provider refuses offline_access without prompt=consent, as idpyoidc does; the app's sign-in gets a refresh token"
    )
    func offlineAccessNeedsConsent() async throws {
        try await WebSignInTests.withApp { provider, app in
            // The app's own request, with its prompt taken out.
            let pending = try await app.sessions.beginSignIn(returnTo: "/")
            var components = try #require(URLComponents(url: pending.authorizationURL, resolvingAgainstBaseURL: false))
            #expect(components.queryItems?.contains { $0.name == "prompt" && $0.value == "consent" } == true)
            components.queryItems = components.queryItems?.filter { $0.name != "prompt" }
            let refused = try await TestBrowser().send(try #require(components.url), method: "GET", form: nil)
            let location = try #require(refused.header("Location"))
            #expect(location.contains("error=invalid_request"), "\(location)")
            #expect(location.contains("consent"), "\(location)")

            let browser = TestBrowser()
            _ = try await WebSignInTests.signIn(browser, app)
            let session = try await WebSignInTests.session(browser, app)
            #expect(!(try await WebSignInTests.refreshToken(app, session)).isEmpty)
        }
    }
}
