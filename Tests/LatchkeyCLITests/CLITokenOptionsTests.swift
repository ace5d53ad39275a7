import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey token`'s per-call options, through the built binary against the development
/// provider: --min-validity, --force, --id-token and --format.
@Suite("latchkey token options")
struct CLITokenOptionsTests: DevProviderCLITest {
    @Test("--min-validity refreshes a token that expires sooner; a token that lasts is printed as it is")
    func minValidity() async throws {
        try await withDevices { dev, a, _ in
            await dev.setAccessTokenLifetime(600)
            #expect(try await login(a, "alice").status == 0)
            await dev.setAccessTokenLifetime(3_600)
            dev.faults.resetCounters()
            let plain = try await a.run("token", "--min-validity", "5m")
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(dev.faults.count("token.refresh_token") == 0, "10 minutes left, 5 asked for")
            let longer = try await a.run("token", "--min-validity", "15m")
            #expect(longer.status == 0, "\(longer.stderr)")
            #expect(dev.faults.count("token.refresh_token") == 1, "10 minutes left, 15 asked for")
            #expect(longer.stdout != plain.stdout)
            #expect(try await a.run("token", "--min-validity", "15m").stdout == longer.stdout, "an hour now")
            #expect(dev.faults.count("token.refresh_token") == 1)
            let bad = try await a.run("token", "--min-validity", "soon")
            #expect(bad.status == 2, "\(bad.status)")
            #expect(bad.stderr.contains("min-validity"))
        }
    }

    @Test("--force refreshes a valid token, once for eight processes at once")
    func force() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let before = try await a.run("token")
            dev.faults.resetCounters()
            // A slow provider: every process has read the old token before the first refresh ends.
            dev.faults.set(.latency(milliseconds: 1_500), for: .token)
            let forced = try await a.runTogether(8, ["token", "--force"])
            dev.faults.clear()
            for run in forced { #expect(run.status == 0, "\(run.stderr)") }
            #expect(Set(forced.map(\.stdout)).count == 1, "every process prints the one new token")
            #expect(forced.first?.stdout != before.stdout)
            #expect(dev.faults.count("token.refresh_token") == 1)
            #expect(try await a.run("token").stdout == forced.first?.stdout)
        }
    }

    @Test("--id-token prints the ID token; --format json tells its type, expiry, issuer and account")
    func idTokenAndJSON() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let id = try await a.run("token", "--id-token")
            #expect(id.status == 0, "\(id.stderr)")
            #expect(id.stdout.split(separator: ".").count == 3, "a compact JWS")
            let json = try await a.run("token", "--id-token", "--format", "json")
            let fields = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(fields["type"] as? String == "id_token")
            #expect((fields["token"] as? String).map { "\($0)\n" } == id.stdout)
            #expect(fields["issuer"] as? String == dev.issuer.absoluteString)
            #expect(fields["account"] as? String == "alice")
            #expect(fields["expiresAt"] is String)
            let access = try await a.run("token", "--format", "json")
            let accessFields = try #require(
                try JSONSerialization.jsonObject(with: Data(access.stdout.utf8)) as? [String: Any])
            #expect(accessFields["type"] as? String == "access_token")
            #expect(accessFields["tokenType"] as? String == "Bearer")
            #expect((accessFields["scope"] as? String)?.contains("openid") == true)
            let narrowed = try await a.run("token", "--id-token", "--scope", "openid")
            #expect(narrowed.status != 0 && narrowed.stderr.contains("--id-token"))
        }
    }

    @Test("--format export prints lines a shell can eval")
    func export() async throws {
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let token = try await a.run("token")
            let export = try await a.run("token", "--format", "export")
            #expect(export.status == 0, "\(export.stderr)")
            let shell = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c",
                    "eval \"$1\"; printf '%s\\n' \"$LATCHKEY_ACCESS_TOKEN\"; test -n \"$LATCHKEY_TOKEN_EXPIRES_AT\"",
                    "sh",
                    export.stdout,
                ])
            #expect(shell.status == 0, "\(shell.stderr)")
            #expect(shell.stdout == token.stdout)
        }
    }

    @Test("--format headers prints the HTTP headers a request carries, for MCP hosts' header helpers")
    func headers() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let token = try await a.run("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let headers = try await a.run("token", "--format", "headers")
            #expect(headers.status == 0, "\(headers.stderr)")
            #expect(headers.object as? [String: String] == ["Authorization": "Bearer \(token)"])
            // A resource at the provider's own origin takes its tokens.
            let files = dev.issuer.appendingPathComponent("files").absoluteString
            let resource = try await a.run("token", "--resource", files, "--format", "headers")
            #expect(resource.status == 0, "\(resource.stderr)")
            #expect((resource.object["Authorization"] as? String)?.hasPrefix("Bearer ") == true)
            #expect(resource.object["Authorization"] as? String != "Bearer \(token)", "the resource's own token")
            let idToken = try await a.run("token", "--format", "headers", "--id-token")
            #expect(idToken.status == 2)
            #expect(idToken.stderr.contains("--format headers is for access tokens"))
        }
    }
}
