import ArgumentParser
import Crypto
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeySQLite

extension KeyCommand {
    /// `latchkey key move --to keyring | --to file FILE [--passphrase]`: keeps the store's key
    /// somewhere else from now on, and removes it from where it was (the key file beside the
    /// database, or the keyring). The home records the new place in `key-location.json`.
    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Keep the store's key in the desktop keyring, or in a file (sealed under a passphrase with --passphrase).",
            discussion: """
                A copy of the home folder (a backup, synced dotfiles) then holds no key to its tokens. \
                The keyring is the freedesktop Secret Service (GNOME Keyring, KWallet), reached through \
                secret-tool (Debian's libsecret-tools); a keyring that is not running or is locked is an error, \
                never a reason to fall back to a file. A passphrase is asked on the terminal, or read from \
                --passphrase-fd. The key itself does not change: `key rotate` changes it.
                """)

        enum Destination: String, ExpressibleByArgument, CaseIterable {
            case keyring, file
        }

        @OptionGroup var global: GlobalOptions
        @Option(help: "Where the key goes.") var to: Destination
        @Argument(help: "With --to file: the new file (mode 0600; an existing file is never replaced).")
        var file: String?
        @Flag(help: "With --to file: seal the key under a passphrase (scrypt, AES-GCM).") var passphrase = false

        func validate() throws {
            switch to {
            case .keyring:
                guard file == nil, !passphrase else {
                    throw ValidationError("--to keyring takes no FILE and no --passphrase.")
                }
            case .file:
                guard file != nil else { throw ValidationError("--to file needs the FILE the key goes to.") }
            }
            guard global.store == nil else {
                throw ValidationError(
                    "key move is for the SQLite store; a PostgreSQL store's key stays with its secret manager.")
            }
        }

        func run() async throws {
            let home = global.location
            guard ProcessInfo.processInfo.environment["LATCHKEY_DATABASE_URL"].map(\.isEmpty) ?? true else {
                throw CLIError.input("key move is for the SQLite store; LATCHKEY_DATABASE_URL names a PostgreSQL one.")
            }
            let source = try await home.resolvedKeySource()
            // The store opens with the key, so the key moved is the store's.
            try await home.openSQLiteStorage().close()
            let key = try Self.key(of: source, home: home)
            let before = try home.recordedKeyLocation()
            let after: KeyLocation
            switch (to, file) {
            case (.keyring, _):
                guard before != .keyring else {
                    throw CLIError.input("The store's key is in the desktop keyring already.")
                }
                try await DesktopKeyring.store(key, for: home.databasePath)
                guard try await DesktopKeyring.key(for: home.databasePath) == key else {
                    throw CLIError.failed(
                        "The desktop keyring gave back another key than it was given; the key stays where it was.")
                }
                after = .keyring
            case (.file, let file?):
                let path = URL(fileURLWithPath: file).standardizedFileURL.path
                if passphrase {
                    let sealed = try PassphraseKeyFile.seal(
                        key, passphrase: try home.readPassphrase(for: path, confirming: true))
                    try sealed.write(to: path)
                    after = .passphraseFile(path)
                } else {
                    try KeyCommand.Generate.write(key, to: path)
                    after = .file(path)
                }
            case (.file, nil):
                throw CLIError.input("--to file needs the FILE the key goes to.")
            }
            try home.recordKeyLocation(after)
            let left = try await Self.removeOld(before: before, source: source, home: home)
            Output.report(
                global, "The store's key is in \(after.summary) now.\(left.map { " \($0)" } ?? "")",
                ["location": .string(after.summary)])
        }

        /// The key the store opened with.
        static func key(of source: SQLiteCredentialStorage.KeySource, home: Home) throws -> SymmetricKey {
            do {
                switch source {
                case .key(let key): return key
                case .keyFile(let path): return try StoreKey.read(fromFile: path)
                case .keyFileBesideDatabase: return try StoreKey.read(fromFile: home.databasePath + ".key")
                case .fileDescriptor: throw CLIError.failed("The key from --key-fd was not read.")
                }
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError.failed("The store's key cannot be read: \(error)")
            }
        }

        /// Writes zeros over the key file, then removes it: what a file system keeps of the
        /// blocks it frees is then no key.
        static func overwriteAndRemove(_ path: String) {
            let descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor >= 0 {
                var status = stat()
                if fstat(descriptor, &status) == 0, status.st_size > 0 {
                    let zeros = [UInt8](repeating: 0, count: Int(status.st_size))
                    _ = zeros.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                    _ = fsync(descriptor)
                }
                close(descriptor)
            }
            unlink(path)
        }

        /// Removes the key from where it was when that was Latchkey's own place (the file beside
        /// the database, the keyring); a file the user named is left, and the note says so.
        static func removeOld(before: KeyLocation?, source: SQLiteCredentialStorage.KeySource, home: Home) async throws
            -> String?
        {
            switch (before, source) {
            case (.keyring?, _):
                try await DesktopKeyring.clear(for: home.databasePath)
                return "It was removed from the desktop keyring."
            case (nil, .keyFileBesideDatabase):
                let path = home.databasePath + ".key"
                Self.overwriteAndRemove(path)
                return "\(path) was removed."
            case (.file(let path)?, _), (.passphraseFile(let path)?, _), (nil, .keyFile(let path)):
                return "\(path) is left where it is: delete it once nothing needs it."
            default:
                return nil
            }
        }
    }
}
