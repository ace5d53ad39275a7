import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey key move`: the store's key in a real GNOME Keyring on a private D-Bus session, in a
/// passphrase-sealed file, and back in a plain file, through the built binary.
@Suite(
    "The store's key in the desktop keyring or under a passphrase",
    .enabled(if: providersRequired || PrivateKeyring.isAvailable))
struct CLIKeyringTests: DevProviderCLITest {
    @Test(
        "keyring, then a passphrase-sealed file, then a plain file: the tokens open at each step; a copy of the home opens nothing"
    )
    func moves() async throws {
        // Tokens that outlive the test: it compares the token at each step with the first, and
        // under the thread sanitizer on two cores its scrypt runs took over 12 minutes, past the
        // default 5-minute token (whose refresh then printed a new one).
        var configuration = DevProviderConfiguration.default
        configuration.accessTokenLifetime = 86_400
        try await PrivateKeyring.with { keyring in
            try await withDevices(configuration) { _, a, _ in
                let env = keyring.environment
                #expect(try await login(a, "alice").status == 0)
                let token = try await a.run(arguments: ["token"], environment: env).stdout
                let database = a.path + "/credentials.sqlite"

                let toKeyring = try await a.run(arguments: ["key", "move", "--to", "keyring"], environment: env)
                #expect(toKeyring.status == 0, "\(toKeyring.stderr)")
                #expect(
                    !FileManager.default.fileExists(atPath: database + ".key"), "the key file is gone from the home")
                #expect(try await keyring.lookup(database).status == 0)
                #expect(try await a.run(arguments: ["token"], environment: env).stdout == token)
                // A copy of the home (a backup) holds no key: its store is another path.
                let copy = try TemporaryFolder()
                defer { copy.cleanUp() }
                let copied = copy.file("home")
                try FileManager.default.copyItem(atPath: a.path, toPath: copied)
                let stolen = try await CLI.run(["--home", copied, "token"], environment: env)
                #expect(stolen.status == 2, "\(stolen.stderr)")
                #expect(stolen.stderr.contains("holds no key"))
                // Without the keyring's session: an error naming it, never a new key.
                var away = env
                away["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(copy.file("no-bus"))"
                let unreachable = try await a.run(arguments: ["token"], environment: away)
                #expect(unreachable.status == 2)
                #expect(unreachable.stderr.contains("desktop keyring"))
                #expect(!FileManager.default.fileExists(atPath: database + ".key"))
                #expect(try await a.run(arguments: ["key", "rotate"], environment: env).status == 2)

                let sealedFile = copy.file("store.key.sealed")
                let toSealed = try await a.run(
                    arguments: ["key", "move", "--to", "file", sealedFile, "--passphrase", "--passphrase-fd", "0"],
                    input: "correct horse", environment: env)
                #expect(toSealed.status == 0, "\(toSealed.stderr)")
                #expect(try await keyring.lookup(database).status != 0, "the keyring no longer holds it")
                let sealed = try String(contentsOfFile: sealedFile, encoding: .utf8)
                #expect(sealed.contains("scrypt"))
                let opened = try await a.run(
                    arguments: ["token", "--passphrase-fd", "0"], input: "correct horse", environment: env)
                #expect(opened.stdout == token, "\(opened.stderr)")
                let wrong = try await a.run(
                    arguments: ["token", "--passphrase-fd", "0"], input: "wrong", environment: env)
                #expect(wrong.status == 2)
                #expect(wrong.stderr.contains("does not open"))
                let noPassphrase = try await a.run(arguments: ["token"], environment: env)
                #expect(noPassphrase.status == 2, "no terminal, no --passphrase-fd")

                let plainFile = copy.file("store.key")
                let toPlain = try await a.run(
                    arguments: ["key", "move", "--to", "file", plainFile, "--passphrase-fd", "0"],
                    input: "correct horse", environment: env)
                #expect(toPlain.status == 0, "\(toPlain.stderr)")
                #expect(toPlain.stdout.contains("left where it is"))
                #expect(try await a.run(arguments: ["token"], environment: env).stdout == token)
                let before = try String(contentsOfFile: plainFile, encoding: .utf8)
                let rotated = try await a.run(arguments: ["key", "rotate"], environment: env)
                #expect(rotated.status == 0, "\(rotated.stderr)")
                #expect(
                    try String(contentsOfFile: plainFile, encoding: .utf8) != before, "the recorded file was rotated")
                #expect(try await a.run(arguments: ["token"], environment: env).stdout == token)
            }
        }
    }

    @Test("a keyring that is not running is an error that names it, and the key stays where it was")
    func unavailable() async throws {
        try await PrivateKeyring.with(running: false) { keyring in
            try await withDevices { _, a, _ in
                #expect(try await login(a, "alice").status == 0)
                let moved = try await a.run(
                    arguments: ["key", "move", "--to", "keyring"], environment: keyring.environment)
                #expect(moved.status == 2)
                #expect(moved.stderr.contains("desktop keyring"))
                #expect(FileManager.default.fileExists(atPath: a.path + "/credentials.sqlite.key"))
                #expect(!FileManager.default.fileExists(atPath: a.path + "/key-location.json"))
                #expect(try await a.run(arguments: ["token"], environment: keyring.environment).status == 0)
            }
        }
    }
}
