import Crypto
import Foundation
import LatchkeyCommandLine
import Subprocess

/// The store's key in the desktop keyring: the freedesktop Secret Service that GNOME Keyring and
/// KWallet implement, reached through `secret-tool` (Debian's `libsecret-tools`). The item is
/// found by the attributes `application=latchkey` and `store=<database path>`, so that two homes
/// keep two keys. An unavailable or locked keyring is an error that names it (exit 2): Latchkey
/// never falls back to a file, and never makes a new key.
enum DesktopKeyring {
    /// Stores `key` for the store at `database`, replacing an item with the same attributes.
    static func store(_ key: SymmetricKey, for database: String) async throws {
        let encoded = key.withUnsafeBytes { Data($0) }.base64EncodedString()
        let label = "Latchkey store key (\(database))"
        let result = try await run(["store", "--label", label] + attributes(database), input: encoded)
        guard result.status == 0 else { throw unavailable(result.stderr, doing: "keep the store's key") }
    }

    /// The key kept for the store at `database`.
    static func key(for database: String) async throws -> SymmetricKey {
        let result = try await run(["lookup"] + attributes(database), input: nil)
        guard result.status == 0 else {
            guard result.stderr.isEmpty else { throw unavailable(result.stderr, doing: "give the store's key") }
            throw CLIError.input(
                "The desktop keyring holds no key for the store \(database) (application=latchkey store=\(database)). It was removed from the keyring, or this home's key lives elsewhere: nothing was changed."
            )
        }
        let text = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
            throw CLIError.failed("The desktop keyring's item for the store \(database) is not a 256-bit key.")
        }
        return SymmetricKey(data: bytes)
    }

    /// Removes the key kept for the store at `database`.
    static func clear(for database: String) async throws {
        let result = try await run(["clear"] + attributes(database), input: nil)
        guard result.status == 0 else { throw unavailable(result.stderr, doing: "remove the store's key") }
    }

    private static func attributes(_ database: String) -> [String] {
        ["application", "latchkey", "store", database]
    }

    private static func unavailable(_ stderr: String, doing what: String) -> CLIError {
        let said = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        return CLIError.input(
            "The desktop keyring (Secret Service) did not \(what): \(said.isEmpty ? "it gave no reason" : said). Unlock it, or start a keyring daemon in this session; nothing was changed."
        )
    }

    private static func run(_ arguments: [String], input: String?) async throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        do {
            let result = try await Subprocess.run(
                .name("secret-tool"), arguments: Arguments(arguments), input: .string(input ?? ""),
                output: .string(limit: 64 * 1024), error: .string(limit: 64 * 1024))
            let status: Int32
            switch result.terminationStatus {
            case .exited(let code): status = code
            case .signaled(let signal): status = 128 + signal
            }
            return (status, result.standardOutput, result.standardError)
        } catch {
            throw CLIError.input(
                "The desktop keyring cannot be reached: secret-tool (Debian's libsecret-tools) could not be run (\(error))."
            )
        }
    }
}
