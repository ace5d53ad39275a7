import ArgumentParser
import Foundation
import Latchkey
import LatchkeySQLite

extension LatchkeyCommand {
    /// Shows Latchkey's lifecycle on this machine with nothing installed beyond the build.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk through the credential lifecycle in a temporary home, with no network.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let home = FileManager.default.temporaryDirectory.appendingPathComponent(
                "latchkey-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: home) }
            var narrator = Narrator()
            let path = home.appendingPathComponent("credentials.sqlite").path

            narrator.step("Open an encrypted credential store at \(path)")
            let storage = try SQLiteCredentialStorage(path: path)
            let store = CredentialStore(storage: storage)
            let provider = ProviderIdentity(issuer: "https://login.example", clientID: "latchkey-cli")

            narrator.step(
                "Sign two accounts in (sample tokens; the development provider arrives with the next release)")
            let alice = try await store.add(Self.sampleToken(user: "alice", provider: provider))
            let bob = try await store.add(Self.sampleToken(user: "bob", provider: provider))
            narrator.check(
                "alice is the default account (the first one added)", try await store.default?.id == alice.id)

            narrator.step("Switch the default account to bob")
            try await store.setDefault(bob.id)
            narrator.check("bob is the default account", try await store.default?.id == bob.id)

            narrator.step("Find an account by email")
            narrator.check(
                "bob@example.com finds bob",
                try await store.find(.email("bob@example.com")).map(\.id) == [bob.id])

            narrator.step("Look at the database file: token values are sealed with AES-GCM")
            try storage.close()
            let bytes = FileManager.default.contents(atPath: path) ?? Data()
            let bobToken = try require(
                try await SQLiteCredentialStorage(path: path).credential(for: bob.id), "stored credential"
            ).token
            narrator.check(
                "no access token appears in the file's \(bytes.count) bytes",
                bytes.range(of: Data((bobToken.accessToken ?? "").utf8)) == nil)
            narrator.note("a stored token prints as: \(bobToken)")

            narrator.step("Remove bob on this device (local only: the tokens stay valid on the server)")
            let reopened = try await CredentialStore.sqlite(at: path)
            try await reopened.remove(bob.id)
            narrator.check("the default is now nil, with no silent promotion", try await reopened.default == nil)
            narrator.check("alice is still stored", try await reopened.all().map(\.id) == [alice.id])

            try narrator.finish()
        }

        static func sampleToken(user: String, provider: ProviderIdentity) -> Token {
            let claims = #"{"sub":"sub-\#(user)","preferred_username":"\#(user)","email":"\#(user)@example.com"}"#
            let payload = Data(claims.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            return Token(
                accessToken: "demo-access-\(UUID().uuidString)", refreshToken: "demo-refresh-\(UUID().uuidString)",
                idToken: "eyJhbGciOiJub25lIn0.\(payload).", scopes: ["openid", "profile", "email"],
                issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600), provider: provider)
        }
    }
}

/// Prints the demo's narrative and keeps count of the checks that failed.
struct Narrator {
    private var number = 0
    private var failures: [String] = []

    mutating func step(_ text: String) {
        number += 1
        print("\n\(number). \(text)")
    }

    mutating func check(_ text: String, _ passed: Bool) {
        print("   \(passed ? "✓" : "✗") \(text)")
        if !passed { failures.append(text) }
    }

    func note(_ text: String) {
        print("   \(text)")
    }

    func finish() throws {
        if failures.isEmpty {
            print("\nEvery step behaved as expected.")
        } else {
            print("\n\(failures.count) step(s) did not behave as expected.")
            throw ExitCode(1)
        }
    }
}

/// Unwraps `value`, or fails the demo with a clear message.
func require<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else { throw ValidationError("The demo expected a \(what) and found none.") }
    return value
}
