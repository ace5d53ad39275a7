import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey` with a Ping journey provider: the built binary against the development
/// provider's journeys, sessions checked on the server's side.
@Suite("latchkey with a Ping journey")
struct CLIPingJourneyTests {
    /// A device with the provider `ping` (the Login journey) and `stepped` (SteppedLogin).
    func withDevice(_ body: (DevProvider, Device) async throws -> Void) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        for (name, journey) in [("ping", "Login"), ("stepped", "SteppedLogin")] {
            let added = try await device.run(
                "provider", "add", name, "--ping-journey", "--server-url", dev.issuer.absoluteString, "--realm",
                "alpha",
                "--journey", journey, "--client-id", "latchkey-cli", "--scopes", "openid profile email offline_access")
            #expect(added.status == 0, "\(added.stderr)")
        }
        do {
            try await body(dev, device)
        } catch {
            await dev.stop()
            throw error
        }
        await dev.stop()
    }

    /// `latchkey login --provider PROVIDER --username USER --password-stdin`, the user's password
    /// unless another is given.
    func login(_ device: Device, _ provider: String = "ping", _ user: String = "alice", password: String? = nil)
        async throws -> CLI.Run
    {
        try await device.run(
            "login", "--provider", provider, "--username", user, "--password-stdin",
            input: password ?? "\(user)-password")
    }

    @Test("provider add --ping-journey: listed with its realm's issuer; its options are checked (exit 2)")
    func providerAdd() async throws {
        try await withDevice { dev, device in
            let list = try await device.run("--json", "provider", "list")
            let ping = try #require(list.array.first { $0["name"] as? String == "ping" })
            #expect(ping["kind"] as? String == "ping-journey")
            #expect(ping["issuer"] as? String == dev.realmIssuer.absoluteString)
            let missing = try await device.run(
                "provider", "add", "x", "--ping-journey", "--server-url", dev.issuer.absoluteString, "--client-id", "c")
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("--realm"))
            let stray = try await device.run(
                "provider", "add", "y", "--issuer", dev.issuer.absoluteString, "--client-id", "c", "--realm", "alpha")
            #expect(stray.status == 2)
        }
    }

    @Test("login walks both journeys with --username and --password-stdin; defaults taken, text on standard error")
    func login() async throws {
        try await withDevice { dev, device in
            let plain = try await login(device)
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.stdout.contains("Signed in as alice"))
            let stepped = try await login(device, "stepped", "bob")
            #expect(stepped.status == 0, "\(stepped.stderr)")
            #expect(stepped.stderr.contains("Welcome to the Latchkey development provider"))
            #expect(!stepped.stdout.contains("Welcome"), "standard output is for the result")
            #expect(try await device.run("--json", "accounts").array.count == 2)
            #expect(await dev.liveJourneySessions(of: "alice") == 1)
            #expect(await dev.liveJourneySessions(of: "bob") == 1)
        }
    }

    @Test("a wrong password is exit 1 with AM's message and stores nothing; an unanswerable callback is exit 2")
    func failures() async throws {
        try await withDevice { _, device in
            let wrong = try await login(device, password: "not-her-password")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("Login failure"))
            #expect(!wrong.stderr.contains("not-her-password"))
            #expect(try await device.run("--json", "accounts").array.isEmpty)

            let nobody = try await device.run("login", "--provider", "stepped")
            #expect(nobody.status == 2)
            #expect(nobody.stderr.contains("NameCallback"))
            #expect(try await device.run("--json", "accounts").array.isEmpty)
        }
    }

    @Test("token, refresh, userinfo; revoke keeps the session and token mints anew; signout ends it all")
    func lifecycle() async throws {
        try await withDevice { dev, device in
            #expect(try await login(device).status == 0)
            let first = try await device.run("token")
            #expect(first.status == 0)
            #expect(try await device.run("refresh").status == 0)
            let refreshed = try await device.run("token").stdout
            #expect(refreshed != first.stdout, "a new access token")
            let userinfo = try await device.run("userinfo")
            #expect(userinfo.stdout.contains("preferred_username: alice"))

            let revoked = try await device.run("revoke")
            #expect(revoked.status == 0, "\(revoked.stdout)\(revoked.stderr)")
            #expect(revoked.stdout.contains("The session stays"))
            #expect(try await Introspect.isActive(refreshed, at: dev) == false)
            #expect(await dev.liveJourneySessions(of: "alice") == 1)
            let minted = try await device.run("token")
            #expect(minted.status == 0)
            #expect(minted.stdout != refreshed)
            #expect(try await Introspect.isActive(minted.stdout, at: dev))

            let signedOut = try await device.run("signout", "--yes")
            #expect(signedOut.status == 0, "\(signedOut.stdout)\(signedOut.stderr)")
            #expect(signedOut.stdout.contains("session-logout succeeded"))
            #expect(await dev.liveJourneySessions(of: "alice") == 0)
            #expect(try await Introspect.isActive(minted.stdout, at: dev) == false)
            #expect(try await device.run("--json", "accounts").array.isEmpty)
        }
    }

    @Test("offline signout queues the session logout (exit 3); the outbox ends the session once online")
    func offline() async throws {
        try await withDevice { dev, device in
            #expect(try await login(device).status == 0)
            let token = try await device.run("token").stdout
            dev.faults.isOffline = true
            let signedOut = try await device.run("signout", "--yes")
            #expect(signedOut.status == 3)
            #expect(signedOut.stdout.contains("session-logout queued"))
            let queued = try await device.run("--json", "outbox", "list")
            #expect(Set(queued.array.compactMap { $0["kind"] as? String }).contains("session_token"))
            dev.faults.isOffline = false
            let retried = try await device.run("outbox", "retry")
            #expect(retried.status == 0, "\(retried.stdout)\(retried.stderr)")
            #expect(await dev.liveJourneySessions(of: "alice") == 0)
            #expect(try await Introspect.isActive(token, at: dev) == false)
            #expect(try await device.run("--json", "outbox", "list").array.isEmpty)
        }
    }

    @Test("on a terminal, login prompts for each callback: the password hidden, the choice numbered with its default")
    func interactive() async throws {
        try await withDevice { _, device in
            let command = "'\(CLI.binary.path)' --home '\(device.path)' login --provider stepped"
            let script = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: CLI.environment())
            _ = try await script.standardOutput { $0.contains("User Name:") }
            script.write("alice\n")
            _ = try await script.standardOutput { $0.contains("Password:") }
            script.write("alice-password\n")
            let shown = try await script.standardOutput { $0.contains("Choose 1-2 [2]:") }
            #expect(shown.contains("Welcome to the Latchkey development provider"))
            #expect(shown.contains("1. No") && shown.contains("2. Yes (default)"))
            script.write("\n")
            let run = CLI.Run(try await script.finish())
            #expect(run.status == 0, "\(run.stdout)")
            #expect(run.stdout.contains("Signed in as alice"))
            #expect(!run.stdout.contains("alice-password"), "the password never shows on the terminal")
        }
    }
}
