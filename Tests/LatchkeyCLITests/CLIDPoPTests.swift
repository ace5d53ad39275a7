import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// Tokens bound to the account's key (`provider add --dpop`), tokens for one resource
/// (`token --resource`, `--scope`), `latchkey api` and `latchkey proof`, with the built binary
/// against the development provider.
@Suite("latchkey with DPoP and resource tokens")
struct CLIDPoPTests {
    /// A home with the development provider added with `--dpop` (and a git host), alice signed in.
    func withBoundAccount(_ body: (DevProvider, Device) async throws -> Void) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        do {
            let added = try await device.run(
                "provider", "add", "dev", "--dpop", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli", "--git-host", "git.latchkey.test", "--resource",
                "https://files.latchkey.test/")
            #expect(added.status == 0, "\(added.stderr)")
            let login = try await device.run(
                arguments: ["login", "--username", "alice", "--password-stdin"], input: "alice-password")
            #expect(login.status == 0, "\(login.stderr)")
            try await body(dev, device)
        } catch {
            await dev.stop()
            throw error
        }
        await dev.stop()
    }

    /// The claims of a JWT access token (the development provider's are), read without checks.
    static func claims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        try #require(parts.count == 3)
        var text = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let data = try #require(Data(base64Encoded: text))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("--format headers refuses a bound token: no fixed headers carry a proof for each request")
    func noFixedHeaders() async throws {
        try await withBoundAccount { _, device in
            let headers = try await device.run("token", "--format", "headers")
            #expect(headers.status == 2, "\(headers.stdout)")
            #expect(headers.stdout.isEmpty)
            #expect(headers.stderr.contains("latchkey proof METHOD URL"))
        }
    }

    @Test("provider add --dpop binds the account's tokens; list says so; userinfo, token and refresh work")
    func bound() async throws {
        try await withBoundAccount { dev, device in
            let list = try await device.run("provider", "list")
            #expect(list.stdout.contains("\tdpop"), "\(list.stdout)")
            let json = try await device.run("--json", "provider", "list")
            #expect(json.stdout.contains(#""dpop":true"#), "\(json.stdout)")
            let token = try await device.run("token")
            #expect(token.status == 0, "\(token.stderr)")
            let claims = try Self.claims(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect((claims["cnf"] as? [String: Any])?["jkt"] is String)
            #expect(try await device.run("userinfo").stdout.contains("preferred_username: alice"))
            #expect(try await device.run("refresh").status == 0)
            // A nonce that changes after every proof costs one challenge, not a failure.
            await dev.requireDPoPNonces(rotatingAfter: 1)
            #expect(try await device.run("userinfo").status == 0)
        }
    }

    @Test("latchkey api sends the request with a proof, prints the body, and --include and --json the rest")
    func api() async throws {
        try await withBoundAccount { dev, device in
            await dev.requireDPoPNonces(rotatingAfter: 1)
            let url = dev.url(.userinfo).absoluteString
            let plain = try await device.run("api", url)
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.stdout.contains(#""preferred_username":"alice""#), "\(plain.stdout)")
            let included = try await device.run("api", "--include", url)
            #expect(included.stdout.hasPrefix("HTTP 200"), "\(included.stdout)")
            #expect(included.stdout.lowercased().contains("dpop-nonce:"))
            let json = try await device.run("--json", "api", "-X", "GET", "-H", "Accept: application/json", url)
            #expect(json.stdout.contains(#""status":200"#), "\(json.stdout)")
            // A non-2xx answer is exit 1 with its body; a bad URL, plain http elsewhere, or a bad
            // header is exit 2 before anything is sent.
            let refused = try await device.run("api", "-X", "DELETE", url)
            #expect(refused.status == 1)
            for arguments in [
                ["api", "not a url"], ["api", "http://example.com/"], ["api", "-H", "no colon", url],
                ["api", "--resource", "https://files.latchkey.test/#x", url],
            ] {
                #expect(try await device.run(arguments: arguments).status == 2, "\(arguments)")
            }
        }
    }

    @Test("latchkey proof prints headers that curl-like scripts send as they are")
    func proof() async throws {
        try await withBoundAccount { dev, device in
            let url = dev.url(.userinfo).absoluteString
            let proof = try await device.run("proof", "GET", url)
            #expect(proof.status == 0, "\(proof.stderr)")
            let lines = proof.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 2)
            #expect(lines[0].hasPrefix("Authorization: DPoP "))
            #expect(lines[1].hasPrefix("DPoP: "))
            var request = HTTPClientRequest(url: url)
            for line in lines {
                let parts = line.split(separator: ":", maxSplits: 1)
                request.headers.add(name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(response.status.code == 200)
            // A proof is for one request: the same headers again are a replay.
            let replay = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(replay.status.code == 401)
            // The URL as a user may spell it: the proof's htu is what the server compares
            // (RFC 9449 §4.3: scheme lower case, no query, no fragment).
            let spelled = url.replacingOccurrences(of: "http://", with: "HTTP://") + "?pretty=1#top"
            let normalized = try await device.run("proof", "GET", spelled)
            #expect(normalized.status == 0, "\(normalized.stderr)")
            var again = HTTPClientRequest(url: url + "?pretty=1")
            for line in normalized.stdout.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                again.headers.add(name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
            }
            #expect(try await HTTPClient.shared.execute(again, timeout: .seconds(10)).status.code == 200)
        }
    }

    @Test(
        "a provider that answers a DPoP sign-in or refresh with bearer tokens: the message says DPoP, and a bound account stays bound"
    )
    func bearerAnswers() async throws {
        try await withBoundAccount { dev, device in
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": #""Bearer""#], remaining: 1), for: .token)
            let login = try await device.run(
                arguments: ["login", "--username", "bob", "--password-stdin"], input: "bob-password")
            #expect(login.status != 0)
            #expect(login.stderr.contains("DPoP"), "\(login.stderr)")
            #expect(!login.stderr.contains("password grant"), "\(login.stderr)")
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": #""Bearer""#], remaining: 1), for: .token)
            let refresh = try await device.run("refresh")
            #expect(refresh.status != 0)
            #expect(refresh.stderr.contains("DPoP"), "\(refresh.stderr)")
            let token = try await device.run("token", "--format", "json")
            #expect(token.object["tokenType"] as? String == "DPoP", "\(token.stdout)")
            #expect(try await device.run("userinfo").status == 0)
        }
    }

    @Test("token --resource and --scope print a token for that audience and those scopes")
    func resourceTokens() async throws {
        try await withBoundAccount { _, device in
            let resource = try await device.run("token", "--resource", "https://files.latchkey.test/")
            #expect(resource.status == 0, "\(resource.stderr)")
            let claims = try Self.claims(resource.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(claims["aud"] as? String == "https://files.latchkey.test/")
            let narrowed = try await device.run("token", "--scope", "openid email")
            let scope = try Self.claims(narrowed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["scope"]
            #expect(scope as? String == "openid email")
            // Kept: the same token again, without a request.
            let again = try await device.run("token", "--resource", "https://files.latchkey.test/")
            #expect(again.stdout == resource.stdout)
            #expect(try await device.run("token", "--resource", "files").status == 2)
        }
    }

    @Test("git's and kubectl's helpers refuse a bound access token, and say why")
    func helpersRefuse() async throws {
        try await withBoundAccount { _, device in
            let git = try await device.run(
                arguments: ["credential", "git", "get"], input: "protocol=https\nhost=git.latchkey.test\n\n")
            #expect(!git.stdout.contains("password="))
            #expect(git.stderr.contains("DPoP"), "\(git.stderr)")
            let access = try await device.run("credential", "kubectl", "--token", "access")
            #expect(access.status == 2)
            #expect(access.stderr.contains("DPoP"), "\(access.stderr)")
            // The ID token is not bound: kubectl may have it.
            let id = try await device.run("credential", "kubectl")
            #expect(id.status == 0, "\(id.stderr)")
            // The same through the agent, on a machine with no store: refused the same way.
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let agent = try await CLIAgentTests.Agent.start(
                on: device, ["--foreground"], socket: folder.file("agent.sock"))
            let remote = try await agent.ask("credential", "kubectl", "--token", "access")
            #expect(remote.status == 2, "\(remote.stdout)")
            #expect(remote.stderr.contains("DPoP"), "\(remote.stderr)")
            #expect(try await agent.ask("credential", "kubectl").status == 0)
            agent.process.send(signal: SIGTERM)
            _ = try await agent.process.finish()
        }
    }
}
