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
struct CLIDevProviderTests {
    func withDevices(
        _ configuration: DevProviderConfiguration = .default, _ body: (DevProvider, Device, Device) async throws -> Void
    ) async throws {
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let a = try Device()
        let b = try Device()
        defer {
            a.cleanUp()
            b.cleanUp()
        }
        for device in [a, b] {
            let added = try await device.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
        }
        do {
            try await body(dev, a, b)
        } catch {
            await dev.stop()
            throw error
        }
        await dev.stop()
    }

    func login(_ device: Device, _ user: String, _ extra: String...) async throws -> CLI.Run {
        try await device.run(
            arguments: ["login", "--username", user, "--password-stdin"] + extra, input: "\(user)-password")
    }

    @Test("provider add, list, remove; bad input is exit 2")
    func providers() async throws {
        let device = try Device()
        defer { device.cleanUp() }
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "http://login.example.com", "--client-id",
                "x"
            )
            .status == 2)
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "x", "--endpoint",
                "bogus=https://x.example"
            ).status == 2)
        #expect(try await device.run("provider", "add", "p", "--cognito", "--client-id", "x").status == 2)
        #expect(
            try await device.run(
                "provider", "add", "p", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "x", "--auth-method",
                "basic"
            ).status == 2)
        let added = try await device.run(
            arguments: [
                "provider", "add", "corp", "--allow-password-grant", "--issuer", "https://login.example.com",
                "--client-id", "cli",
                "--client-secret-stdin", "--auth-method", "post", "--scope", "openid email",
                "--endpoint", "end-session=https://login.example.com/logout",
            ],
            input: "s3cret")
        #expect(added.status == 0, "\(added.stderr)")
        let cognito = try await device.run(
            "--json", "provider", "add", "pool", "--cognito", "--region", "eu-west-1", "--user-pool-id",
            "eu-west-1_abc",
            "--client-id", "app", "--endpoint-url", "http://127.0.0.1:9")
        #expect(cognito.status == 0)
        #expect(cognito.object["name"] as? String == "pool")
        #expect(
            try await device.run(
                "provider", "add", "corp", "--allow-password-grant", "--issuer", "https://x.example", "--client-id", "y"
            ).status
                == 2)
        let list = try await device.run("provider", "list", "--json")
        #expect(list.array.map { $0["name"] as? String } == ["corp", "pool"])
        #expect(list.array.last?["issuer"] as? String == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc")
        let file = try String(contentsOfFile: device.path + "/providers.json", encoding: .utf8)
        #expect(!file.contains("s3cret"), "the client secret is sealed with the store's key")
        #expect(file.contains("sealedClientSecret"))
        let mode =
            try FileManager.default.attributesOfItem(atPath: device.path + "/providers.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await device.run("provider", "remove", "corp").status == 0)
        #expect(try await device.run("provider", "remove", "corp").status == 2)
        #expect(try await device.run("provider", "list").stdout.contains("pool"))
        // With two providers, login must name one.
        _ = try await device.run(
            "provider", "add", "other", "--allow-password-grant", "--issuer", "https://other.example", "--client-id",
            "z")
        #expect(
            try await device.run(arguments: ["login", "--username", "u", "--password-stdin"], input: "p").status == 2)
    }

    @Test("login, accounts, use, token, refresh, userinfo: the happy path and its JSON")
    func accountsAndTokens() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let bob = try await login(a, "bob", "--json")
            #expect(bob.object["isDefault"] as? Bool == false)
            let wrong = try await a.run(arguments: ["login", "--username", "alice", "--password-stdin"], input: "nope")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.hasPrefix("latchkey: "))
            #expect(try await a.run("login", "--browser", "--device").status == 2)

            let accounts = try await a.run("--json", "accounts")
            #expect(accounts.status == 0)
            #expect(accounts.array.count == 2)
            let first = try #require(accounts.array.first)
            #expect(
                Set(first.keys) == [
                    "id", "provider", "username", "email", "isDefault", "accessTokenExpiresAt", "hasRefreshToken",
                ])
            #expect(first["username"] as? String == "alice")
            #expect(first["isDefault"] as? Bool == true)
            #expect(first["provider"] as? String == "dev")
            #expect(first["hasRefreshToken"] as? Bool == true)

            #expect(try await a.run("use", "bob@example.com").status == 0)
            #expect(try await a.run("use", "carol").status == 2)
            let token = try await a.run("token")
            #expect(token.status == 0)
            let raw = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(raw.split(separator: ".").count == 3)
            #expect(!raw.contains(" "))
            let aliceToken = try await a.run("token", "alice")
            #expect(aliceToken.stdout != token.stdout)

            let refreshed = try await a.run("refresh", "--json")
            #expect(refreshed.status == 0)
            #expect(refreshed.object["accessTokenExpiresAt"] != nil)
            #expect(try await a.run("token").stdout != token.stdout)
            let userinfo = try await a.run("userinfo", "--json")
            #expect(userinfo.object["email"] as? String == "bob@example.com")
            #expect(try await a.run("userinfo").stdout.contains("preferred_username: bob"))
            #expect(dev.faults.count("token.refresh_token") == 1)
        }
    }

    @Test("revoke by type, remove is local, and errors never show a token")
    func revokeAndRemove() async throws {
        try await withDevices { _, a, _ in
            _ = try await login(a, "alice")
            let token = try await a.run("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let revoked = try await a.run("revoke", "--type", "access", "--json")
            #expect(revoked.status == 0)
            #expect((revoked.object["outcomes"] as? [String: String])?["access_token"] == "revoked")
            let again = try await a.run("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(again != token)
            #expect(try await a.run("revoke", "--type", "everything").status == 2)
            let removed = try await a.run("remove")
            #expect(removed.status == 0)
            #expect(removed.stdout.contains("stay valid on the server"))
            #expect(try await a.run("--json", "accounts").array.isEmpty)
            let none = try await a.run("token")
            #expect(none.status == 2)
            #expect(!none.stderr.contains(again))
        }
    }

    @Test("signout: refuses without a terminal, complete (0), partial and queued (3), still signed in (1)")
    func signOut() async throws {
        try await withDevices { dev, a, _ in
            _ = try await login(a, "alice")
            _ = try await login(a, "bob")
            let refused = try await a.run("signout")
            #expect(refused.status == 2)
            #expect(try await a.run("--json", "accounts").array.count == 2)

            let complete = try await a.run("signout", "alice", "--yes", "--json")
            #expect(complete.status == 0)
            #expect(complete.object["outcome"] as? String == "complete")
            #expect(complete.object["signedOutLocally"] as? Bool == true)
            let steps = try #require(complete.object["steps"] as? [[String: Any]])
            #expect(steps.allSatisfy { Set($0.keys) == ["account", "step", "status", "error", "retryable"] })
            #expect(steps.map { $0["step"] as? String }.contains("local-removal"))

            dev.faults.isOffline = true
            let strict = try await a.run("signout", "bob", "--yes", "--policy", "server-first", "--global", "--json")
            #expect(strict.status == 1)
            #expect(strict.object["outcome"] as? String == "failed")
            #expect(strict.object["signedOutLocally"] as? Bool == false)
            let partial = try await a.run("signout", "bob", "--yes", "--json")
            #expect(partial.status == 3)
            #expect(partial.object["outcome"] as? String == "partial")
            let queued = (partial.object["steps"] as? [[String: Any]] ?? []).filter {
                $0["status"] as? String == "queued"
            }
            #expect(queued.count == 2)
            #expect(queued.allSatisfy { $0["retryable"] as? Bool == true && $0["error"] is String })

            let outbox = try await a.run("outbox", "--json")
            #expect(outbox.array.count == 2)
            #expect(try await a.run("outbox", "retry").status == 1)
            dev.faults.isOffline = false
            let retried = try await a.run("outbox", "retry", "--json")
            #expect(retried.status == 0)
            #expect(retried.object["revoked"] as? Int == 2)
            #expect(try await a.run("outbox").stdout.contains("empty"))
        }
    }

    @Test("signout --global on device A: device B must sign in again (exit 4); a local signout leaves B alone")
    func twoDevices() async throws {
        try await withDevices { _, a, b in
            _ = try await login(a, "alice")
            _ = try await login(b, "alice")
            #expect(try await a.run("signout", "--yes").status == 0)
            #expect(try await b.run("userinfo").status == 0)
            _ = try await login(a, "alice")
            let global = try await a.run("signout", "--global", "--json")
            #expect(global.status == 0)
            let globalStep = (global.object["steps"] as? [[String: Any]] ?? []).first {
                $0["step"] as? String == "global-signout"
            }
            #expect(globalStep?["status"] as? String == "succeeded")
            let rejected = try await b.run("refresh")
            #expect(rejected.status == 4)
            #expect(rejected.stderr.contains("sign in again"))
            #expect(try await b.run("--json", "accounts").array.count == 1)  // nothing deleted behind the user's back
        }
    }

    @Test("login --device shows the code on standard error and signs in once it is approved")
    func deviceLogin() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.devicePollingInterval = 1
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        _ = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString, "--client-id",
            "latchkey-cli")

        let login = try await CLI.start(["--home", device.path, "--json", "login", "--device"])
        // The code is on standard error while the CLI polls.
        let prompt = try await login.standardError { $0.contains("\n(or open") }
        let code = try #require(prompt.split(separator: " ").dropFirst(3).first.map(String.init))
        #expect(prompt.hasPrefix("Enter the code \(code) at \(dev.url(.deviceVerification).absoluteString)"))
        var request = HTTPClientRequest(url: dev.url(.deviceVerification).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: "user_code=\(code)&username=alice&password=alice-password&action=approve"))
        let approval = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        #expect(approval.status == .ok)
        let finished = try await login.finish()
        #expect(finished.status == 0)
        let result = try JSONSerialization.jsonObject(with: Data(finished.stdout.utf8)) as? [String: Any]
        #expect(result?["account"] as? String == "alice")
        await dev.stop()
    }

    @Test("signout on a terminal asks: Cancel changes nothing, 'this device' signs out")
    func interactiveSignOut() async throws {
        try await withDevices { _, a, _ in
            _ = try await login(a, "alice")
            // script(1) gives the command a terminal; the answer comes on its standard input.
            func ask(_ answer: String) async throws -> CLI.Run {
                let command = "'\(CLI.binary.path)' --home '\(a.path)' signout"
                let script = try await ChildProcess.start(
                    URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                    environment: CLI.environment())
                // Answer once the question is on the terminal.
                _ = try await script.standardOutput { $0.contains("Choose [1-3]") }
                script.write("\(answer)\n")
                return CLI.Run(try await script.finish())
            }
            let cancelled = try await ask("3")
            #expect(cancelled.stdout.contains("Sign out on ALL devices"))
            #expect(cancelled.stdout.contains("Cancelled; nothing changed."))
            #expect(cancelled.status == 0)
            #expect(try await a.run("--json", "accounts").array.count == 1)
            let signedOut = try await ask("1")
            #expect(signedOut.status == 0)
            #expect(signedOut.stdout.contains("Signed out."))
            #expect(try await a.run("--json", "accounts").array.isEmpty)
        }
    }

    /// Plays the browser: posts the development provider's sign-in form for `url`, follows the
    /// redirect to the loopback listener, and returns the page it shows.
    static func playBrowser(at url: URLComponents, dev: DevProvider, username: String, password: String)
        async throws -> String
    {
        var form = URLComponents()
        form.queryItems =
            (url.queryItems ?? []) + [
                URLQueryItem(name: "username", value: username), URLQueryItem(name: "password", value: password),
            ]
        var request = HTTPClientRequest(url: dev.url(.authorization).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: form.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""))
        let noRedirects = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        defer { _ = noRedirects.shutdown() }
        let signedIn = try await noRedirects.execute(request, timeout: .seconds(10))
        let location = try #require(signedIn.headers.first(name: "Location"))
        #expect(location.hasPrefix("http://127.0.0.1:"))
        let callback = try await noRedirects.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
        #expect(callback.status == .ok)
        return String(buffer: try await callback.body.collect(upTo: 1 << 16))
    }

    @Test("login --browser opens $BROWSER with the URL (and prints it); --no-browser only prints it")
    func browserOpens() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        let folder = try TemporaryFolder()
        defer {
            device.cleanUp()
            folder.cleanUp()
        }
        _ = try await device.run(
            "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli")
        let recording = try RecordingBrowser(in: folder)
        let (opened, browser) = (recording.opened, recording.command)

        let login = try await CLI.start(
            ["--home", device.path, "login", "--browser", "--timeout", "30"],
            environment: ["BROWSER": "/nonexistent/browser:\(browser)"])
        let prompt = try await login.standardError { $0.contains("(opened with") }
        #expect(prompt.contains("(opened with \(browser))"))
        while !FileManager.default.fileExists(atPath: opened) { try await Task.sleep(for: .milliseconds(20)) }
        let url = try String(contentsOfFile: opened, encoding: .utf8)
        #expect(prompt.contains(url), "the URL is printed too")
        let page = try await Self.playBrowser(
            at: try #require(URLComponents(string: url)), dev: dev, username: "alice", password: "alice-password")
        #expect(page.contains("Signed in") && page.contains("close this window"))
        #expect(try await login.finish().status == 0)

        try FileManager.default.removeItem(atPath: opened)
        let printing = try await CLI.start(
            ["--home", device.path, "login", "--browser", "--no-browser", "--timeout", "30"],
            environment: ["BROWSER": browser])
        let printed = try await printing.standardError { $0.components(separatedBy: "\n").count >= 3 }
        let shown = try #require(URLComponents(string: printed.components(separatedBy: "\n")[1]))
        _ = try await Self.playBrowser(at: shown, dev: dev, username: "bob", password: "bob-password")
        #expect(try await printing.finish().status == 0)
        #expect(!printed.contains("(opened with"))
        #expect(!FileManager.default.fileExists(atPath: opened), "--no-browser opened nothing")
        await dev.stop()
    }

    @Test("login --browser prints the URL to open, and signs in when the browser comes back")
    func browserLogin() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        _ = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString, "--client-id",
            "latchkey-cli")
        let login = try await CLI.start([
            "--home", device.path, "--json", "login", "--browser", "--no-browser", "--timeout", "30",
        ])
        let prompt = try await login.standardError { $0.components(separatedBy: "\n").count >= 3 }
        let lines = prompt.components(separatedBy: "\n")
        #expect(lines.first == "Open this URL to sign in:")
        let url = try #require(URLComponents(string: lines.count > 1 ? lines[1] : ""))
        #expect(url.queryItems?.contains { $0.name == "code_challenge_method" && $0.value == "S256" } == true)
        let callback = try await Self.playBrowser(at: url, dev: dev, username: "bob", password: "bob-password")
        #expect(callback.hasPrefix("Signed in."))
        let finished = try await login.finish()
        #expect(finished.status == 0)
        let result = try JSONSerialization.jsonObject(with: Data(finished.stdout.utf8)) as? [String: Any]
        #expect(result?["account"] as? String == "bob")
        await dev.stop()
    }

    @Test("the demo runs the whole lifecycle and exits 0; completions are generated")
    func demoAndCompletions() async throws {
        let demo = try await CLI.run(["demo"])
        #expect(demo.status == 0, "\(demo.stdout)\(demo.stderr)")
        #expect(demo.stdout.contains("Every step behaved as expected."))
        let completion = try await CLI.run(["--generate-completion-script", "bash"])
        #expect(completion.status == 0)
        #expect(completion.stdout.contains("latchkey"))
    }

    /// Signs alice in on `device` with an access token that is stale a second later, and lets
    /// every refresh from then on bring hour-long ones.
    func signInWithShortToken(_ dev: DevProvider, _ device: Device) async throws {
        await dev.setAccessTokenLifetime(2)
        let login = try await login(device, "alice")
        #expect(login.status == 0, "\(login.stderr)")
        await dev.setAccessTokenLifetime(3_600)
        // Stale once it expires within half its lifetime.
        try await Task.sleep(for: .milliseconds(1_200))
    }

    @Test("eight `latchkey token` processes on a stale credential: one refresh, one token, the grant alive (3 rounds)")
    func parallelTokens() async throws {
        try await withDevices { dev, a, _ in
            for round in 0..<3 {
                if round == 0 {
                    try await signInWithShortToken(dev, a)
                } else {
                    await dev.setAccessTokenLifetime(2)
                    #expect(try await a.run("refresh").status == 0)
                    await dev.setAccessTokenLifetime(3_600)
                    try await Task.sleep(for: .milliseconds(1_200))
                }
                dev.faults.resetCounters()
                let runs = try await a.runTogether(8, ["token"])
                for run in runs { #expect(run.status == 0, "round \(round): \(run.stderr)") }
                #expect(Set(runs.map(\.stdout)).count == 1, "round \(round): every process prints the same token")
                #expect(dev.faults.count("token.refresh_token") == 1, "round \(round)")
            }
            let refreshed = try await a.run("refresh")
            #expect(refreshed.status == 0, "the grant is alive: \(refreshed.stderr)")
        }
    }

    @Test("the process holding the refresh lease is killed mid-refresh: another takes over, nothing silently broken")
    func killedLeaseHolder() async throws {
        try await withDevices { dev, a, _ in
            try await signInWithShortToken(dev, a)
            dev.faults.resetCounters()
            dev.faults.set(.latency(milliseconds: 1_500), for: .token)
            let holder = try await CLI.start(["--home", a.path, "token"])
            while dev.faults.count(.token) == 0 { try await Task.sleep(for: .milliseconds(10)) }
            holder.send(signal: SIGKILL)
            #expect(try await holder.finish().status == SIGKILL)
            dev.faults.clear()
            let successor = try await a.run(arguments: ["token"], environment: ["LATCHKEY_LOG": "debug"])
            #expect(successor.stderr.contains("taking over the lease of a holder that is gone"))
            // The killed request may still reach the provider after the takeover and replay the
            // old refresh token, which ends the grant. Either the account works, or it says so.
            try await Task.sleep(for: .milliseconds(1_700))
            let after = try await a.run("refresh")
            switch after.status {
            case 0:
                let token = try await a.run("token")
                #expect(token.status == 0)
                #expect(try await Introspect.isActive(token.stdout, at: dev))
            case 4:
                // A rejected refresh token does not always end the access token with it (an
                // expired refresh token, say), so `token` may still hand out an unexpired one;
                // what must hold is that the account says it needs sign-in, every time.
                #expect(try await a.run("refresh").status == 4, "still reported, not silently broken")
                #expect(try await a.run("accounts").stdout.contains("must sign in again"))
            default:
                Issue.record("refresh after the takeover: exit \(after.status): \(after.stderr)")
            }
        }
    }

    @Test("a provider with endpoints only in RFC 8414 metadata and no ID token from the password grant")
    func oauthOnlyProvider() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.omittedFromOpenIDConfiguration = ["revocation_endpoint", "introspection_endpoint"]
        configuration.passwordGrantIssuesIDToken = false
        try await withDevices(configuration) { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)
            let accounts = try await a.run("--json", "accounts")
            #expect(accounts.array.compactMap { $0["username"] as? String } == ["alice", "bob"])
            #expect(accounts.array.compactMap { $0["email"] as? String } == ["alice@example.com", "bob@example.com"])
            #expect(try await a.run("use", "bob").status == 0)
            #expect(try await a.run("token", "alice@example.com").status == 0)
            #expect(try await a.run("revoke", "alice").status == 0)
            let signout = try await a.run("signout", "bob", "--yes")
            #expect(signout.status == 0, "complete: \(signout.stdout)")
            // Offline, a sign-out queues; the queue drains through the RFC 8414 endpoints.
            #expect(try await login(a, "alice").status == 0)
            dev.faults.isOffline = true
            #expect(try await a.run("signout", "alice", "--yes").status == 3)
            dev.faults.isOffline = false
            let retry = try await a.run("outbox", "retry")
            #expect(retry.status == 0, "\(retry.stdout) \(retry.stderr)")
            #expect(try await a.run("--json", "outbox").array.isEmpty)
        }
    }

    @Test("a damaged row is listed by id with exit 1 while every healthy account and entry keeps working")
    func damagedRows() async throws {
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            #expect(try await login(a, "bob").status == 0)
            let alice = try #require(try await a.run("--json", "accounts").array.first?["id"] as? String)
            let database = a.path + "/credentials.sqlite"
            let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
            let damage = try await ChildProcess.run(
                sqlite3, [database, "UPDATE credential SET sealed_token = x'00' WHERE id = '\(alice)'"])
            try #require(damage.status == 0, "\(damage.stderr)")

            let accounts = try await a.run("accounts")
            #expect(accounts.status == 1)
            #expect(accounts.stdout.contains("damaged account \(alice)"))
            #expect(accounts.stdout.contains("bob"))
            #expect(try await a.run("token", "bob").status == 0)
            #expect(try await a.run("signout", "bob", "--yes").status == 0)

            // The outbox: one queued sign-out, one of its rows damaged.
            #expect(try await login(a, "bob").status == 0)
            dev.faults.isOffline = true
            #expect(try await a.run("signout", "bob", "--yes").status == 3)
            dev.faults.isOffline = false
            let entries = try await a.run("--json", "outbox").array
            let victim = try #require(entries.first?["id"] as? String)
            let edit = try await ChildProcess.run(
                sqlite3, [database, "UPDATE outbox SET client_id = 'someone-else' WHERE id = '\(victim)'"])
            try #require(edit.status == 0, "\(edit.stderr)")
            let retry = try await a.run("outbox", "retry")
            #expect(retry.status == 1, "damaged rows need a person: \(retry.stdout)")
            #expect(retry.stdout.contains("sent \(entries.count - 1)"))
            let list = try await a.run("outbox")
            #expect(list.status == 1)
            #expect(list.stdout.contains("damaged entry \(victim)"))
            #expect(try await a.run("outbox", "drop", victim).status == 0)
            #expect(try await a.run("outbox", "drop", victim).status == 2)
            #expect(try await a.run("outbox").status == 0)
            #expect(try await a.run("remove", alice).status == 0)
            #expect(try await a.run("accounts").status == 0)
        }
    }

    @Test("keys: generate, a key kept elsewhere (--key-file, --key-fd), rotate; client secrets sealed and re-sealed")
    func keys() async throws {
        try await withDevices { dev, a, _ in
            // A confidential client: its secret must survive the rotation.
            let confidential = try await a.run(
                arguments: [
                    "provider", "add", "corp", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                    "--client-id",
                    "latchkey-confidential", "--client-secret-stdin", "--auth-method", "basic",
                ],
                input: "latchkey-confidential-secret")
            #expect(confidential.status == 0, "\(confidential.stderr)")
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            let before = try await a.run("token")
            #expect(before.status == 0)
            let rotate = try await a.run("key", "rotate")
            #expect(rotate.status == 0, "\(rotate.stderr)")
            #expect(try await a.run("token").stdout == before.stdout, "the tokens survive the new key")
            #expect(try await a.run("refresh", "alice").status == 0, "and the confidential client's secret too")
            #expect(try await login(a, "bob", "--provider", "corp").status == 0)

            // A key kept elsewhere: generated once, never replaced, named on every run.
            let keys = try TemporaryKeys()
            defer { keys.cleanUp() }
            let keyFile = keys.path + "/home.key"
            #expect(try await CLI.run(["key", "generate", keyFile]).status == 0)
            #expect(try await CLI.run(["key", "generate", keyFile]).status == 2, "an existing key is never replaced")
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let elsewhere = try Device()
            defer { elsewhere.cleanUp() }
            #expect(
                try await elsewhere.run(
                    "--key-file", keyFile, "provider", "add", "dev", "--allow-password-grant", "--issuer",
                    dev.issuer.absoluteString,
                    "--client-id", "latchkey-cli"
                ).status == 0)
            #expect(
                try await elsewhere.run(
                    arguments: ["--key-file", keyFile] + ["login", "--username", "alice", "--password-stdin"],
                    input: "alice-password"
                ).status == 0)
            #expect(!FileManager.default.fileExists(atPath: elsewhere.path + "/credentials.sqlite.key"))
            #expect(try await elsewhere.run("--key-file", keyFile, "token").status == 0)
            #expect(try await elsewhere.run("token").status == 1, "without its key the store does not open")
            // The same key through a descriptor, as a secret manager would hand it over.
            let shell = try await ChildProcess.run(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", "exec \"$0\" --home \"$1\" --key-fd 3 token 3< \"$2\"", CLI.binary.path, elsewhere.path,
                    keyFile,
                ],
                environment: CLI.environment())
            #expect(shell.status == 0, "\(shell.stderr)")
            #expect(shell.stdout == (try await elsewhere.run("--key-file", keyFile, "token")).stdout)
        }
    }

    @Test("a client secret an earlier version kept in the clear is sealed on the next run")
    func legacyClientSecret() async throws {
        try await withDevices { dev, a, _ in
            let file = a.path + "/providers.json"
            let legacy = """
                [{"name": "corp", "kind": "openid", "clientID": "latchkey-confidential", "issuer": "\(dev.issuer.absoluteString)",
                  "clientSecret": "latchkey-confidential-secret", "authMethod": "basic", "allowsPasswordGrant": true}]
                """
            try Data(legacy.utf8).write(to: URL(fileURLWithPath: file))
            #expect(try await login(a, "alice", "--provider", "corp").status == 0)
            let sealed = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!sealed.contains("latchkey-confidential-secret"))
            #expect(try await a.run("refresh").status == 0)
        }
    }

    @Test("latchkey runs without core dumps: a core would hold decrypted tokens and the key")
    func noCoreDumps() async throws {
        try await withDevices { _, a, _ in
            // A command that waits (for the browser), so its limits can be read while it runs.
            let waiting = try await CLI.start([
                "--home", a.path, "login", "--browser", "--no-browser", "--timeout", "30",
            ])
            _ = try await waiting.standardError { $0.contains("Open this URL") }
            let limits = try String(contentsOfFile: "/proc/\(waiting.processIdentifier)/limits", encoding: .utf8)
            waiting.send(signal: SIGTERM)
            _ = try await waiting.finish()
            let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
            #expect(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"])
        }
    }

    @Test("login with a password needs a provider added with --allow-password-grant")
    func passwordGrantNeedsOptIn() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        #expect(
            try await device.run(
                "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli"
            )
            .status == 0)
        let refused = try await device.run(
            arguments: ["login", "--username", "alice", "--password-stdin"], input: "alice-password")
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--allow-password-grant"))
        #expect(dev.faults.count("token.password") == 0)
        await dev.stop()
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

    @Test("--password-stdin on a terminal asks without echoing the password")
    func passwordWithoutEcho() async throws {
        try await withDevices { _, a, _ in
            let command = "'\(CLI.binary.path)' --home '\(a.path)' login --username alice --password-stdin"
            let script = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: CLI.environment())
            // The terminal shows what the program writes and what the terminal echoes.
            _ = try await script.standardOutput { $0.contains("Password:") }
            script.write("alice-password\n")
            let run = CLI.Run(try await script.finish())
            #expect(run.status == 0, "\(run.stdout)")
            #expect(run.stdout.contains("Signed in as alice"))
            #expect(!run.stdout.contains("alice-password"), "the password never shows on the terminal")
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
