import Foundation
import LatchkeyTestSupport
import Testing

let providersRequired = ProcessInfo.processInfo.environment["LATCHKEY_REQUIRE_PROVIDERS"] == "1"

/// Settings written by the scripts that start the outside providers.
func providerEnvironment(_ name: String, variable: String) -> [String: Any]? {
    let path =
        ProcessInfo.processInfo.environment[variable]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".providers/\(name)/env.json").path
    guard let data = FileManager.default.contents(atPath: path),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let pid = object["pid"] as? Int, kill(Int32(pid), 0) == 0
    else { return nil }
    return object
}

@Suite(
    "latchkey against Glewlwyd",
    .enabled(if: providersRequired || providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV") != nil))
struct CLIGlewlwydTests {
    @Test("eight `latchkey token` processes on a stale credential at a rotating Glewlwyd: one refresh, one token")
    func parallelTokensWithRotation() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try #require(
                providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
            let issuer = try #require(
                environment["rotating_issuer"] as? String, "restart Glewlwyd with the current script")
            let lifetime = try #require(environment["rotating_access_token_ttl"] as? Int)
            let a = try Device()
            defer { a.cleanUp() }
            try await Self.addGlewlwyd(as: "rotating", issuer: issuer, on: a)
            // Stale once it expires within half its lifetime.
            try await Task.sleep(for: .milliseconds(lifetime * 500 + 300))
            let runs = try await a.runTogether(8, ["token"], environment: ["LATCHKEY_LOG": "debug"])
            for run in runs { #expect(run.status == 0, "\(run.stderr)") }
            #expect(Set(runs.map(\.stdout)).count == 1, "every process prints the same token")
            // Each process logs "refreshing" just before it sends a refresh token; Glewlwyd kills
            // the chain when one comes back, so a second one would also fail a process above.
            let refreshes = runs.flatMap { $0.stderr.split(separator: "\n") }.filter { $0.hasSuffix("] refreshing") }
            #expect(refreshes.count == 1)
            // Debug logging names requests, refreshes and leases, never a token.
            let printed = try #require(runs.first?.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(!printed.isEmpty)
            for run in runs { #expect(!run.stderr.contains(printed)) }
            let refreshed = try await a.run("refresh")
            #expect(refreshed.status == 0, "the chain is alive: \(refreshed.stderr)")
            #expect(try await a.run("userinfo").status == 0)
        }
    }

    @Test("login, accounts, token, refresh, userinfo, revoke and a global sign-out that falls back")
    func lifecycle() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try #require(
                providerEnvironment("glewlwyd", variable: "LATCHKEY_GLEWLWYD_ENV"), "Glewlwyd is not running")
            let issuer = try #require(environment["issuer"] as? String)
            let a = try Device()
            let b = try Device()
            defer {
                a.cleanUp()
                b.cleanUp()
            }
            for device in [a, b] { try await Self.addGlewlwyd(as: "glewlwyd", issuer: issuer, on: device) }
            let accounts = try await a.run("accounts", "--json")
            #expect(accounts.array.first?["email"] as? String == "alice@example.com")
            let token = try await a.run("token")
            #expect(token.status == 0)
            #expect(try await a.run("refresh").status == 0)
            #expect(try await a.run("token").stdout != token.stdout)
            #expect(try await a.run("userinfo", "--json").object["email"] as? String == "alice@example.com")
            #expect(try await a.run("revoke", "--type", "access").status == 0)
            #expect(try await a.run("userinfo").status == 0)  // refreshed behind the scenes

            let signout = try await a.run("signout", "--global", "--json")
            #expect(signout.status == 0, "\(signout.stdout)\(signout.stderr)")
            let steps = signout.object["steps"] as? [[String: Any]] ?? []
            let global = steps.first { $0["step"] as? String == "global-signout" }
            #expect(global?["status"] as? String == "skipped")
            #expect(
                steps.first { $0["step"] as? String == "revoke-refresh-token" }?["status"] as? String == "succeeded")
            let url = try #require((signout.object["browserURLs"] as? [String])?.first)
            #expect(url.contains("end_session"))
            #expect(url.contains("id_token_hint=REDACTED"), "the ID token stays out of JSON unless --show-urls")
            // Glewlwyd has no global sign-out: device B is not reached, as the report said.
            #expect(try await b.run("refresh").status == 0)
            // In text, the end-session URL (it carries the ID token) goes to standard error only.
            let text = try await b.run("signout", "--global")
            #expect(text.stderr.contains("Open this URL to end the provider session"))
            #expect(text.stderr.contains("id_token_hint="))
            #expect(!text.stdout.contains("id_token_hint"))
        }
    }
}

@Suite(
    "latchkey against Cognito (moto)",
    .enabled(if: providersRequired || providerEnvironment("cognito", variable: "LATCHKEY_COGNITO_ENV") != nil))
struct CLICognitoTests {
    @Test(
        "a Cognito pool: login, token, userinfo, global sign-out and RevokeToken (exit 0), device B must sign in again (exit 4)"
    )
    func lifecycle() async throws {
        let environment = try #require(
            providerEnvironment("cognito", variable: "LATCHKEY_COGNITO_ENV"), "moto is not running")
        let a = try Device()
        let b = try Device()
        defer {
            a.cleanUp()
            b.cleanUp()
        }
        for device in [a, b] {
            let added = try await device.run(
                "provider", "add", "pool", "--cognito", "--region", try #require(environment["region"] as? String),
                "--user-pool-id", try #require(environment["userPoolId"] as? String),
                "--client-id", try #require(environment["clientId"] as? String),
                "--endpoint-url", try #require(environment["endpoint"] as? String))
            #expect(added.status == 0, "\(added.stderr)")
            let login = try await device.run(
                arguments: ["login", "--username", "carol", "--password-stdin"], input: "Carol-password-1")
            #expect(login.status == 0, "\(login.stderr)")
        }
        #expect(try await a.run("accounts", "--json").array.first?["username"] as? String == "carol")
        #expect(try await a.run("token").status == 0)
        #expect(try await a.run("userinfo", "--json").object["email"] as? String == "carol@example.com")
        #expect(try await a.run("login", "--browser").status == 2)

        let signout = try await a.run("signout", "--global", "--json")
        #expect(signout.status == 0, "\(signout.stdout)\(signout.stderr)")
        let steps = signout.object["steps"] as? [[String: Any]] ?? []
        #expect(steps.first { $0["step"] as? String == "global-signout" }?["status"] as? String == "succeeded")
        #expect(steps.first { $0["step"] as? String == "revoke-refresh-token" }?["status"] as? String == "succeeded")
        #expect(try await a.run("outbox", "--json").array.isEmpty)
        #expect(try await b.run("refresh").status == 4)
    }
}

extension CLIGlewlwydTests {
    /// Adds Glewlwyd's confidential client (its quirk: the password grant needs it) as the
    /// provider `name` on `device`, and signs alice in there.
    static func addGlewlwyd(as name: String, issuer: String, on device: Device) async throws {
        let added = try await device.run(
            arguments: [
                "provider", "add", name, "--allow-password-grant", "--issuer", issuer, "--client-id",
                "latchkey-confidential", "--client-secret-stdin", "--auth-method", "basic",
            ],
            input: "latchkey-confidential-secret")
        #expect(added.status == 0, "\(added.stderr)")
        let login = try await device.run(
            arguments: ["login", "--username", "alice", "--password-stdin"], input: "alice-password")
        #expect(login.status == 0, "\(login.stderr)")
    }
}
