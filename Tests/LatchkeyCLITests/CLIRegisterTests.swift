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

    @Test("the client's name says latchkey and nothing of this machine unless --client-name asks")
    func clientName() async throws {
        try await withDevices { dev, a, _ in
            // A provider that repeats the request in its refusal shows what was sent.
            dev.faults.set(DevProviderFault(echoesRequest: true), for: .registration)
            let sent = try await a.run("provider", "add", "reg", "--issuer", dev.issuer.absoluteString, "--register")
            #expect(sent.status == 1)
            #expect(sent.stderr.contains(#"client_name":"latchkey""#), "\(sent.stderr)")
            #expect(!sent.stderr.contains(ProcessInfo.processInfo.hostName))
            let named = try await a.run(
                "provider", "add", "reg", "--issuer", dev.issuer.absoluteString, "--register", "--client-name",
                "build agent 7")
            #expect(named.stderr.contains(#"client_name":"build agent 7""#), "\(named.stderr)")
        }
    }

    @Test("--confidential answered with a public client adds nothing and deletes that client again")
    func confidentialWithoutSecret() async throws {
        try await withDevices { dev, a, _ in
            dev.faults.set(
                DevProviderFault(replacedFields: ["client_secret": "null", "token_endpoint_auth_method": #""none""#]),
                for: .registration)
            let added = try await a.run(
                "provider", "add", "reg", "--issuer", dev.issuer.absoluteString, "--register", "--confidential")
            #expect(added.status == 1, "\(added.stdout)")
            #expect(added.stderr.contains("registered a public client"), "\(added.stderr)")
            #expect(added.stderr.contains("it was deleted again"), "\(added.stderr)")
            #expect(try await a.run("provider", "list", "--json").array.map { $0["name"] as? String } == ["dev"])
        }
    }

    @Test("provider remove --unregister deletes the registered client (RFC 7592) before removing the provider")
    func unregister() async throws {
        try await withDevices { dev, a, _ in
            let issuer = dev.issuer.absoluteString
            let added = try await a.run(
                "provider", "add", "reg", "--issuer", issuer, "--register", "--allow-password-grant", "--json")
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.object["deletable"] as? Bool == true)
            let clientID = try #require(added.object["clientId"] as? String)
            // A key rotation seals the registration access token again, with the client secrets.
            let rotated = try await a.run("key", "rotate")
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let file = a.path + "/providers.json"
            let kept = try String(contentsOfFile: file, encoding: .utf8)
            #expect(kept.contains("sealedRegistrationAccessToken"))
            #expect(kept.contains("registrationClientURI"))
            #expect(!kept.contains("registration_access_token"))
            #expect(
                try await a.run(
                    "login", "--provider", "reg", "--username", "alice", "--password-stdin", input: "alice-password"
                ).status == 0)

            // A provider that was not registered here has nothing to delete its client with.
            let notRegistered = try await a.run("provider", "remove", "dev", "--unregister")
            #expect(notRegistered.status == 2)
            #expect(notRegistered.stderr.contains("nothing to delete"))
            #expect(try await a.run("provider", "list", "--json").array.count == 2, "nothing was removed")

            let removed = try await a.run("provider", "remove", "reg", "--unregister")
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(removed.stdout.contains("Deleted the client \(clientID)"))
            // The provider forgot the client: it no longer signs anyone in.
            #expect(
                try await a.run(
                    "provider", "add", "again", "--issuer", issuer, "--client-id", clientID, "--allow-password-grant"
                )
                .status == 0)
            let refused = try await a.run(
                "login", "--provider", "again", "--username", "bob", "--password-stdin", input: "bob-password")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("invalid_client"), "\(refused.stderr)")

            // Deleting a client that is gone already is the provider's 401: the entry stays.
            try kept.write(toFile: file, atomically: true, encoding: .utf8)
            let twice = try await a.run("provider", "remove", "reg", "--unregister")
            #expect(twice.status == 1)
            #expect(twice.stderr.contains("was not deleted"), "\(twice.stderr)")
            #expect(try await a.run("provider", "list", "--json").array.contains { $0["name"] as? String == "reg" })
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

        // Glewlwyd manages what it registered (RFC 7592): the client is deleted, and signs no one in.
        #expect(added.object["deletable"] as? Bool == true)
        let clientID = try #require(added.object["clientId"] as? String)
        let removed = try await a.run("provider", "remove", "glewlwyd", "--unregister")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(
            try await a.run(
                arguments: [
                    "provider", "add", "again", "--issuer", issuer, "--client-id", clientID, "--allow-password-grant",
                ]
            ).status == 0)
        let refused = try await a.run(
            "login", "--provider", "again", "--username", "alice", "--password-stdin", input: "alice-password")
        #expect(refused.status != 0, "a deleted client signs no one in")
    }
}
