import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing

/// `latchkey login --resource URL` with nothing configured: the resource says where to sign in
/// (RFC 9728), a client is registered there (RFC 7591), and the token the resource takes follows.
@Suite("latchkey login from a resource's URL alone")
struct CLIResourceFirstTests {
    @Test("discovers the authorization server, registers a client, adds a provider, and the resource takes the token")
    func wholeChain() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp", scopes: ["files:read"])]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let resource = dev.issuer.appendingPathComponent("mcp")

        let login = try await device.run(
            arguments: ["login", "--resource", resource.absoluteString, "--username", "alice", "--password-stdin"],
            input: "alice-password")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stderr.contains("is served by \(dev.issuer.absoluteString)"))
        let providers = try await device.run("provider", "list", "--json")
        let entry = try #require(providers.array.first)
        #expect(providers.array.count == 1)
        #expect(entry["name"] as? String == "127.0.0.1-\(dev.issuer.port ?? 0)")
        #expect((entry["clientId"] as? String)?.hasPrefix("reg-") == true, "a registered client")

        let token = try await device.run("token", "--resource", resource.absoluteString)
        #expect(token.status == 0, "\(token.stderr)")
        var request = HTTPRequest(method: .get, url: resource)
        request.headerFields[.authorization] = "Bearer \(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"
        let answer = try await AsyncHTTPClientTransport.shared.send(request, body: nil, options: HTTPTransportOptions())
        #expect(answer.response.status == .ok, "the resource needs files:read, which the resource named")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("files:read"))
        await dev.stop()
    }

    @Test(
        "--device with a metadata document's client id: signed in when the document lists the device grant (as the README says to publish), refused when it does not",
        arguments: [true, false])
    func clientIDMetadataDocumentDevice(listsDeviceGrant: Bool) async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp")]
        configuration.devicePollingInterval = 1
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let grants =
            ["authorization_code", "refresh_token"]
            + (listsDeviceGrant ? ["urn:ietf:params:oauth:grant-type:device_code"] : [])
        let publisher = try await ClientDocumentPublisher.start(grantTypes: grants)
        let clientID = publisher.clientID
        let resource = dev.issuer.appendingPathComponent("mcp").absoluteString
        let login = try await CLI.start([
            "--home", device.path, "--json", "login", "--resource", resource, "--client-id", clientID, "--device",
        ])
        if listsDeviceGrant {
            let first = try await login.standardOutput { $0.contains("\n") }
            let prompt = try #require(try CLILoginTests.documents(first).first ?? nil)
            try await CLILoginTests.approve(try #require(prompt["user_code"] as? String), at: dev)
        }
        let finished = try await login.finish()
        if listsDeviceGrant {
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(try await device.run("api", resource).status == 0)
        } else {
            #expect(finished.status == 1)
            #expect(finished.stderr.contains("unauthorized_client"), "\(finished.stderr)")
            #expect(try await device.run("token").status != 0, "nothing signed in")
        }
        await publisher.stop()
        await dev.stop()
    }

    @Test(
        "a client id that is a metadata document's URL: no registration, the provider fetches the document, the sign-in and the resource work"
    )
    func clientIDMetadataDocument() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp")]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let publisher = try await ClientDocumentPublisher.start(
            grantTypes: ["authorization_code", "refresh_token", "password"])
        let clientID = publisher.clientID
        let resource = dev.issuer.appendingPathComponent("mcp").absoluteString

        let login = try await device.run(
            arguments: [
                "login", "--resource", resource, "--client-id", clientID, "--username", "alice", "--password-stdin",
            ], input: "alice-password")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stderr.contains("using client \(clientID)"), "\(login.stderr)")
        #expect(publisher.fetched == 1, "the provider fetched the document once")
        let providers = try await device.run("provider", "list", "--json")
        #expect(providers.array.first?["clientId"] as? String == clientID, "no client was registered")
        let reached = try await device.run("api", resource)
        #expect(reached.status == 0, "\(reached.stderr)")
        #expect(reached.stdout.contains(#""username":"alice""#))
        await publisher.stop()
        await dev.stop()
    }

    @Test(
        "login --resource URL --device with nothing configured: a client registered for the device grant, the code approved, no port bound"
    )
    func deviceFromURL() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp", scopes: ["files:read"])]
        configuration.devicePollingInterval = 1
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let resource = dev.issuer.appendingPathComponent("mcp")

        let login = try await CLI.start([
            "--home", device.path, "login", "--resource", resource.absoluteString, "--device",
        ])
        let prompt = try await login.standardError { $0.contains("\n(or open") }
        let words = try #require(
            prompt.range(of: "Enter the code ").map { prompt[$0.upperBound...].split(separator: " ") })
        try await CLILoginTests.approve(try #require(words.first.map(String.init)), at: dev)
        let finished = try await login.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        let providers = try await device.run("provider", "list", "--json")
        let entry = try #require(providers.array.first)
        #expect((entry["clientId"] as? String)?.hasPrefix("reg-") == true, "a registered client")
        let token = try await device.run("token", "--resource", resource.absoluteString)
        #expect(token.status == 0, "\(token.stderr)")
        await dev.stop()
    }

    @Test("a URL client id at a provider that fetches no metadata documents is refused before anything is added")
    func clientIDMetadataDocumentUnsupported() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp")]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        dev.faults.set(
            DevProviderFault(replacedFields: ["client_id_metadata_document_supported": "false"]), for: .discovery)
        let device = try Device()
        defer { device.cleanUp() }
        let login = try await device.run(
            arguments: [
                "login", "--resource", dev.issuer.appendingPathComponent("mcp").absoluteString, "--client-id",
                "https://tool.example/client.json", "--username", "alice", "--password-stdin",
            ], input: "alice-password")
        #expect(login.status == 1)
        #expect(login.stderr.contains("does not fetch client metadata documents"), "\(login.stderr)")
        #expect(try await device.run("provider", "list", "--json").array.isEmpty)
        await dev.stop()
    }

    @Test("a URL that asks for no token: exit 1, with what to run instead, and nothing added")
    func notProtected() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let open = dev.issuer.appendingPathComponent(".well-known/openid-configuration")
        let login = try await device.run(
            arguments: ["login", "--resource", open.absoluteString, "--username", "alice", "--password-stdin"],
            input: "alice-password")
        #expect(login.status == 1)
        #expect(login.stderr.contains("does not say where to sign in"))
        #expect(login.stderr.contains("latchkey provider add"))
        #expect(try await device.run("provider", "list", "--json").array.isEmpty)
        await dev.stop()
    }

    @Test(
        "api on a server never seen says what to run; after it, api reaches the resource; a missing scope names the login"
    )
    func apiSaysWhatToRun() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.protectedResources = [.init(path: "/mcp"), .init(path: "/files", scopes: ["files:read"])]
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        let mcp = dev.issuer.appendingPathComponent("mcp").absoluteString
        let first = try await device.run("api", mcp)
        #expect(first.status == 2)
        #expect(first.stderr.contains("takes tokens from \(dev.issuer.absoluteString)"), "\(first.stderr)")
        #expect(first.stderr.contains("latchkey login --resource \(mcp)"))

        let login = try await device.run(
            arguments: ["login", "--resource", mcp, "--username", "alice", "--password-stdin"], input: "alice-password")
        #expect(login.status == 0, "\(login.stderr)")
        let reached = try await device.run("api", mcp)
        #expect(reached.status == 0, "\(reached.stderr)")
        #expect(reached.stdout.contains(#""username":"alice""#))

        // The account's token lacks the scope /files needs: the login to run names it.
        let files = dev.issuer.appendingPathComponent("files").absoluteString
        let refused = try await device.run("api", files)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("insufficient_scope"), "\(refused.stderr)")
        // Each word quoted only where a shell would read it otherwise (`ShellCommand`).
        #expect(refused.stderr.contains("latchkey login --resource \(files) --scope files:read"), "\(refused.stderr)")
        await dev.stop()
    }
}
