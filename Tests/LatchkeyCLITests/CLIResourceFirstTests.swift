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
        #expect(refused.stderr.contains(#"latchkey login --resource \#(files) --scope "files:read""#))
        await dev.stop()
    }
}
