import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey provider add --register`: a client registered with the provider (RFC 7591) instead
/// of one named with --client-id, through the built binary.
@Suite("latchkey provider add --register")
struct CLIRegisterTests: DevProviderCLITest {
    @Test("a public and a confidential client are registered at the development provider, and sign in")
    func devProvider() async throws {
        try await withDevices { dev, a, _ in
            let issuer = dev.issuer.absoluteString
            let added = try await a.run(
                "provider", "add", "public", "--issuer", issuer, "--register", "--allow-password-grant", "--json")
            #expect(added.status == 0, "\(added.stderr)")
            let clientID = try #require(added.object["clientId"] as? String)
            #expect(clientID.hasPrefix("reg-"))
            #expect(added.object["registered"] as? Bool == true)
            #expect(
                try await a.run(
                    "login", "--provider", "public", "--username", "alice", "--password-stdin", input: "alice-password"
                ).status == 0)
            #expect(try await a.run("token").status == 0)

            let confidential = try await a.run(
                "provider", "add", "private", "--issuer", issuer, "--register", "--confidential",
                "--allow-password-grant", "--client-name", "a test")
            #expect(confidential.status == 0, "\(confidential.stderr)")
            #expect(confidential.stdout.contains("confidential; its secret is sealed in the store"))
            let signedIn = try await a.run(
                "login", "--provider", "private", "--username", "bob", "--password-stdin", input: "bob-password")
            #expect(signedIn.status == 0, "the sealed secret authenticates the client: \(signedIn.stderr)")
            let listed = try await a.run("provider", "list", "--json")
            #expect(listed.array.compactMap { $0["clientId"] as? String }.count == 3)
            let file = try String(contentsOfFile: a.path + "/providers.json", encoding: .utf8)
            #expect(file.contains("sealedClientSecret"))
        }
    }

    @Test("a provider without registration, a refused redirect URI and contradictory options add nothing")
    func refusals() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.clientRegistration = false
        try await withDevices(configuration) { dev, a, _ in
            let issuer = dev.issuer.absoluteString
            let none = try await a.run("provider", "add", "reg", "--issuer", issuer, "--register")
            #expect(none.status == 2, "\(none.stderr)")
            #expect(none.stderr.contains("does not offer client registration"))
            #expect(none.stderr.contains("--client-id"))
            let both = try await a.run("provider", "add", "reg", "--issuer", issuer, "--register", "--client-id", "x")
            #expect(both.status == 2)
            let neither = try await a.run("provider", "add", "reg", "--issuer", issuer)
            #expect(neither.status == 2)
            #expect(neither.stderr.contains("--register"))
            let listed = try await a.run("provider", "list", "--json")
            #expect(listed.array.map { $0["name"] as? String } == ["dev"])
        }
        try await withDevices { dev, a, _ in
            let refused = try await a.run(
                "provider", "add", "reg", "--issuer", dev.issuer.absoluteString, "--register", "--redirect-uri",
                "http://app.example/callback")
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("invalid_redirect_uri"))
            #expect(try await a.run("provider", "list", "--json").array.count == 1)
        }
    }
}

@Suite(
    "latchkey provider add --register at Glewlwyd",
    .enabled(if: providersRequired || providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV") != nil))
struct CLIGlewlwydRegisterTests {
    @Test("Glewlwyd registers a confidential client; it signs in, refreshes and signs out")
    func glewlwyd() async throws {
        try await AsyncGate.glewlwyd.run { try await Self.registerAndSignIn() }
    }

    static func registerAndSignIn() async throws {
        let environment = try #require(
            providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
        let issuer = try #require(environment["issuer"] as? String)
        let a = try Device()
        defer { a.cleanUp() }
        // Glewlwyd refuses the password grant to public clients, and grants a registered client
        // only the scopes it asked for.
        let added = try await a.run(
            "provider", "add", "glewlwyd", "--issuer", issuer, "--register", "--confidential",
            "--allow-password-grant", "--scope", "openid offline_access", "--json")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.object["registered"] as? Bool == true)
        let login = try await a.run(
            "login", "--provider", "glewlwyd", "--username", "alice", "--password-stdin", input: "alice-password")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(try await a.run("refresh").status == 0)
        let signOut = try await a.run("signout", "--yes")
        #expect(signOut.status == 0 || signOut.status == 3, "\(signOut.stderr)")
    }
}
