import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// What a provider hands the tool never crashes it or reaches the terminal raw.
@Suite("latchkey and the input it cannot trust")
struct CLIHostileInputTests: DevProviderCLITest {
    @Test("userinfo numbers beyond Int's range, fractions and 1e300 are shown, not a crash")
    func hugeNumbers() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.users[0].numberClaims = ["clearance": 9.3e18, "ratio": 0.5, "huge": 1e300, "small": -9.3e18]
        try await withDevices(configuration) { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let userinfo = try await a.run("userinfo")
            #expect(userinfo.status == 0, "\(userinfo.stderr)")
            #expect(userinfo.stdout.contains("9.3e+18"), "\(userinfo.stdout)")
            #expect(userinfo.stdout.contains("0.5"))
            #expect(userinfo.stdout.contains("1e+300"))
        }
    }

    @Test(
        "a provider's relative or scheme-less endpoints, and such URLs given on the command line, end with a message, not a crash"
    )
    func unusableURLs() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 0
        try await withDevices(configuration) { dev, a, _ in
            dev.faults.set(
                DevProviderFault(replacedFields: ["token_endpoint": #""not a url""#, "jwks_uri": #""jwks""#]),
                for: .discovery)
            let login = try await login(a, "alice")
            #expect(login.status == 1, "\(login.stderr)")
            #expect(login.stderr.contains("token_endpoint"), "\(login.stderr)")
            #expect(!login.stderr.contains("Fatal error"))
            dev.faults.clear()
            #expect(try await self.login(a, "alice").status == 0)
            let proof = try await a.run("proof", "GET", "//op.example/x")
            #expect(proof.status == 2, "\(proof.stderr)")
            #expect(proof.stderr.contains("https URL"))
            let api = try await a.run("api", "not a url")
            #expect(api.status == 2, "\(api.stderr)")
            let endpoint = try await a.run(
                "provider", "add", "other", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli",
                "--endpoint", "token=//op.example/token")
            #expect(endpoint.status == 2, "\(endpoint.stderr)")
            #expect(endpoint.stderr.contains("absolute http(s) URL"), "\(endpoint.stderr)")
        }
    }

    @Test("a name with control characters and line breaks is escaped: one account, one line")
    func controlCharacters() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.users.append(
            .init(
                username: "eve\u{1B}[2J\nurl=https://evil.example", password: "eve-password", name: "Eve\r\u{7}",
                email: "eve@example.com"))
        try await withDevices(configuration) { _, a, _ in
            let login = try await a.run(
                "login", "--username", "eve\u{1B}[2J\nurl=https://evil.example", "--password-stdin",
                input: "eve-password")
            #expect(login.status == 0, "\(login.stderr)")
            #expect(!login.stdout.contains("\u{1B}"))
            let accounts = try await a.run("accounts")
            #expect(accounts.status == 0)
            #expect(!accounts.stdout.contains("\u{1B}"), "no escape sequence reaches the terminal")
            #expect(!accounts.stdout.split(separator: "\n").contains { $0.hasPrefix("url=") }, "\(accounts.stdout)")
            #expect(accounts.stdout.contains("\\n"), "the line break is shown escaped")
        }
    }

    @Test(
        "provider text with DEL, NEL, U+2028, U+200B, U+FEFF and tabs: every --json document stays valid JSON that reads back the same, and a listing's columns stay the tool's"
    )
    func jsonAndColumns() async throws {
        let username = "mallory\tforged\tcolumns"
        let name = "Mal\u{7F}\u{85}\u{2028}\u{200B}\u{FEFF}lory\u{1B}[2J\u{E0001}"
        var configuration = DevProviderConfiguration.default
        configuration.users.append(
            .init(username: username, password: "mallory-password", name: name, email: "mallory@example.com"))
        try await withDevices(configuration) { _, a, _ in
            let login = try await a.run("login", "--username", username, "--password-stdin", input: "mallory-password")
            #expect(login.status == 0, "\(login.stderr)")
            // Quick tool (token), full tool (accounts, status, userinfo).
            for command in [
                ["token", "--json"], ["accounts", "--json"], ["status", "--json"], ["userinfo", "--json"],
            ] {
                let result = try await a.run(arguments: command)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                for scalar in ["\u{7F}", "\u{85}", "\u{2028}", "\u{200B}", "\u{FEFF}", "\u{1B}", "\u{E0001}"] {
                    #expect(!result.stdout.contains(scalar), "\(command) wrote \(scalar.debugDescription) raw")
                }
                let document = try #require(
                    try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8), options: [.fragmentsAllowed]),
                    "\(command) wrote no JSON: \(result.stdout)")
                let strings = Self.strings(in: document)
                #expect(strings.contains(username) || strings.contains(name), "\(command): \(result.stdout)")
                if command[0] == "userinfo" { #expect(strings.contains(name), "\(result.stdout)") }
            }
            let accounts = try await a.run("accounts")
            #expect(accounts.status == 0, "\(accounts.stderr)")
            let row = try #require(accounts.stdout.split(separator: "\n").first { $0.contains("mallory") })
            #expect(row.split(separator: "\t", omittingEmptySubsequences: false).count == 4, "\(row)")
            #expect(row.contains(#"mallory\tforged\tcolumns"#), "the tabs are shown escaped: \(row)")
        }
    }

    /// Every string a JSON document holds, keys and values.
    static func strings(in value: Any) -> Set<String> {
        switch value {
        case let text as String: [text]
        case let array as [Any]: array.reduce(into: Set<String>()) { $0.formUnion(strings(in: $1)) }
        case let object as [String: Any]:
            object.reduce(into: Set(object.keys)) { $0.formUnion(strings(in: $1.value)) }
        default: []
        }
    }

    @Test("a device user_code carrying an escape sequence is shown escaped")
    func deviceCode() async throws {
        try await withDevices { dev, a, _ in
            dev.faults.set(
                DevProviderFault(replacedFields: ["user_code": #""WDJB\u001b[2J-MJHT""#], remaining: 1),
                for: .deviceAuthorization)
            let login = try await CLI.start(["--home", a.path, "login", "--device"])
            let shown = try await login.standardError { $0.contains("WDJB") }
            login.send(signal: SIGTERM)
            _ = try await login.finish()
            #expect(shown.contains("WDJB"), "\(shown)")
            #expect(!shown.contains("\u{1B}"), "the terminal never gets the escape sequence")
        }
    }
}
