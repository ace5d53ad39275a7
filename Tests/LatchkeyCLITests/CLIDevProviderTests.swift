import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// Every command, exit code and JSON shape, with the built binary against the development
/// provider; two homes are two devices.
@Suite("latchkey against the development provider")
struct CLIDevProviderTests: DevProviderCLITest {
    @Test("the demo runs the whole lifecycle and exits 0; completions are generated")
    func demoAndCompletions() async throws {
        let demo = try await CLI.run(["demo"])
        #expect(demo.status == 0, "\(demo.stdout)\(demo.stderr)")
        #expect(demo.stdout.contains("Every step behaved as expected."))
        let completion = try await CLI.run(["--generate-completion-script", "bash"])
        #expect(completion.status == 0)
        #expect(completion.stdout.contains("latchkey"))
    }

    @Test("text a provider chose reaches the terminal with its control characters escaped")
    func escapedProviderText() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.users.append(
            .init(
                username: "mallory", password: "mallory-password", name: "Mallory \u{1B}[2J\u{1B}]0;owned\u{07}",
                email: "mallory@example.com"))
        try await withDevices(configuration) { _, a, _ in
            #expect(try await login(a, "mallory").status == 0)
            let userinfo = try await a.run("userinfo")
            #expect(userinfo.status == 0)
            #expect(!userinfo.stdout.utf8.contains(0x1B), "no escape byte reaches the terminal")
            #expect(!userinfo.stdout.utf8.contains(0x07))
            #expect(userinfo.stdout.contains("Mallory \\u{1B}[2J"))
            // The tool's own layout stays: columns separated by tabs, one line each.
            let accounts = try await a.run("accounts")
            #expect(accounts.stdout.contains("\tmallory@example.com\t"))
        }
    }

    @Test("enum options are the parser's: a bad value is exit 2 naming the values; completions list them")
    func enumOptions() async throws {
        let device = try Device()
        defer { device.cleanUp() }
        for arguments in [
            ["signout", "--yes", "--policy", "bogus"], ["revoke", "--type", "bogus"],
            ["provider", "add", "p", "--issuer", "https://x.example", "--client-id", "c", "--auth-method", "bogus"],
        ] {
            let run = try await device.run(arguments: arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.contains("bogus"), "\(run.stderr)")
        }
        let policy = try await device.run("signout", "--yes", "--policy", "bogus")
        #expect(policy.stderr.contains("always-local") && policy.stderr.contains("server-first"))
        let completions = try await CLI.run(["--generate-completion-script", "bash"])
        for value in ["always-local", "server-first", "device-secret", "basic", "post"] {
            #expect(completions.stdout.contains(value), "\(value)")
        }
    }
}

/// A private folder for key files.
struct TemporaryKeys {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}

/// Asks the development provider about a token, as an authenticated client.
enum Introspect {
    static func isActive(_ token: String, at dev: DevProvider) async throws -> Bool {
        var request = HTTPClientRequest(url: dev.url(.introspection).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let credentials = Data("latchkey-confidential:latchkey-confidential-secret".utf8).base64EncodedString()
        request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        let value = token.trimmingCharacters(in: .whitespacesAndNewlines)
        request.body = .bytes(ByteBuffer(string: "token=\(value)"))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return object?["active"] as? Bool == true
    }
}
