import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite

extension LatchkeyCommand {
    /// Shows Latchkey's whole lifecycle on this machine with nothing installed beyond the build.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk through the credential lifecycle against a built-in provider, with no network.",
            discussion: """
                Starts the development provider in this process on an ephemeral loopback port, with two \
                temporary homes as two devices, and checks every step. Exits 0 only when every step \
                behaved as expected.
                """)

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            try global.refuseStoreOptions("`demo` opens none of yours: it makes two temporary homes and removes them.")
            guard !global.json else { throw ValidationError("`demo` narrates its steps for people; it has no --json.") }
        }

        func run() async throws {
            var narrator = Narrator()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "latchkey-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }

            narrator.step("Start the development provider on loopback, and two devices, A and B (two temporary homes)")
            let dev = try await DevProvider.start()
            defer { Task { await dev.stop() } }
            narrator.note("issuer \(dev.issuer.absoluteString); users alice and bob")
            let transport = AsyncHTTPClientTransport.shared
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-cli",
                    scopes: ["openid", "profile", "email", "offline_access", "device_sso"], allowsPasswordGrant: true),
                transport: transport)
            // The provider's own view of tokens, through introspection (a confidential client may ask).
            let inspector = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: dev.issuer, clientID: "latchkey-confidential",
                    authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
                transport: transport)
            func active(_ token: String?) async -> Bool {
                guard let token else { return false }
                return (try? await inspector.introspect(token, kind: .accessToken).active) ?? false
            }
            let deviceA = try await CredentialStore.sqlite(at: root.appendingPathComponent("a/credentials.sqlite").path)
            let deviceB = try await CredentialStore.sqlite(at: root.appendingPathComponent("b/credentials.sqlite").path)
            await deviceA.register(provider)
            await deviceB.register(provider)

            narrator.step("Sign in: alice and bob on device A, alice on device B")
            let aliceA = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: deviceA)
            let bobA = try await provider.signIn(.password(username: "bob", password: "bob-password"), into: deviceA)
            let aliceB = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: deviceB)
            narrator.check("device A holds two accounts, alice is its default", try await deviceA.all().count == 2)
            narrator.check("device A's default is alice", try await deviceA.default?.id == aliceA.id)
            narrator.note("a stored token prints as: \(try await aliceA.token)")

            narrator.step("Switch device A's default account to bob")
            try await deviceA.setDefault(bobA.id)
            narrator.check("bob is the default; alice is still stored", try await deviceA.default?.id == bobA.id)

            narrator.step("Refresh alice's tokens on device A")
            let before = try await aliceA.token
            let refreshed = try await aliceA.refresh()
            narrator.check("a new access token", refreshed.accessToken != before.accessToken)
            narrator.check(
                "the refresh token was rotated and stored", try await aliceA.token.refreshToken != before.refreshToken)
            narrator.check("the new access token is active", await active(refreshed.accessToken))

            narrator.step("Revoke alice's access token only, then ask for a token again")
            let revokedAccess = try await aliceA.token.accessToken
            let revocation = await aliceA.revoke(.accessToken)
            narrator.check("the access token is revoked (introspection: inactive)", await !active(revokedAccess))
            let refreshTokenStays = try await aliceA.token.refreshToken != nil
            narrator.check("the refresh token stays", revocation.succeeded && refreshTokenStays)
            let fresh = try await aliceA.accessToken()
            narrator.check("a new access token comes from the refresh token", await active(fresh))

            narrator.step("Sign alice out on device A only (local sign-out)")
            let local = await deviceA.signOut(.account(aliceA.id), options: .local)
            narrator.report(local)
            let remaining = try await deviceA.all().count
            narrator.check("complete, and alice is gone from device A", local.isComplete && remaining == 1)
            narrator.check("device B keeps working", (try? await aliceB.userInfo())?["sub"] == .string("alice"))

            narrator.step("Sign alice in on A again, then sign out on ALL devices from A (global sign-out)")
            _ = try await provider.signIn(
                .password(username: "alice", password: "alice-password"), into: deviceA, makeDefault: true)
            let global = await deviceA.signOut(.current, options: .global)
            narrator.report(global)
            narrator.check("complete", global.isComplete)
            var rejected = false
            do {
                _ = try await aliceB.userInfo()
            } catch {
                rejected = error.requiresSignIn
                narrator.note("device B: \(error.reason)")
            }
            narrator.check("device B is rejected and must sign in again", rejected)

            narrator.step("Take the provider offline, then sign bob out on device A")
            let bobToken = try await bobA.token
            dev.faults.isOffline = true
            let offline = await deviceA.signOut(.account(bobA.id))
            narrator.report(offline)
            narrator.check(
                "partial: signed out here, the server steps failed", offline.isPartial && offline.signedOutLocally)
            let queued = try await deviceA.outboxEntries()
            narrator.check("bob's revocations wait in the sealed outbox (\(queued.count) entries)", queued.count == 3)
            narrator.check("bob is gone from device A", try await deviceA.all().isEmpty)
            dev.faults.isOffline = false
            narrator.check("meanwhile bob's tokens are still live at the provider", await active(bobToken.refreshToken))

            narrator.step("Bring the provider back and drain the outbox")
            let report = await deviceA.drainOutbox(DrainOptions(includeNotDue: true))
            narrator.note("outbox: \(report)")
            narrator.check("every queued revocation went through", report.revoked == 3 && report.remaining == 0)
            for (kind, value) in [
                ("access token", bobToken.accessToken), ("refresh token", bobToken.refreshToken),
                ("device secret", bobToken.deviceSecret),
            ] {
                narrator.check("bob's \(kind) is dead (introspection: inactive)", await !active(value))
            }

            try narrator.finish()
        }
    }
}

/// Prints the demo's narrative and keeps count of the checks that failed.
struct Narrator {
    private var number = 0
    private var failures: [String] = []

    mutating func step(_ text: String) {
        number += 1
        Output.line("")
        Output.line("\(number). \(text)")
    }

    mutating func check(_ text: String, _ passed: Bool) {
        Output.line(mark: passed, text)
        if !passed { failures.append(text) }
    }

    func note(_ text: String) {
        Output.line("   \(text)")
    }

    func report(_ result: SignOutResult) {
        for step in result.steps {
            var line = "   · \(step.accountName ?? "?"): \(step.kind) \(step.status.rawValue)"
            if step.status != .succeeded, let reason = step.reason { line += " (\(reason.text.prefix(90)))" }
            Output.line(line)
        }
    }

    func finish() throws {
        if failures.isEmpty {
            Output.line("")
            Output.line("Every step behaved as expected.")
        } else {
            Output.line("")
            Output.line("\(failures.count) step(s) did not behave as expected:")
            for failure in failures { Output.line(mark: false, failure) }
            throw CLIError.failed(
                "The demo found \(failures.count) step(s) that did not behave as expected (see above).")
        }
    }
}

extension SignOutResult {
    var isComplete: Bool { if case .complete = self { true } else { false } }
    var isPartial: Bool { if case .partial = self { true } else { false } }
}
