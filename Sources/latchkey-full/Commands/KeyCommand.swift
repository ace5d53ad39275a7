import ArgumentParser
import Crypto
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeySQLite
import SystemPackage

/// `latchkey key generate | rotate`.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Make a key, or seal the store again under a new one.",
        subcommands: [Generate.self, Rotate.self, Move.self])

    /// `latchkey key generate FILE`: a new 256-bit key, base64, in a new file of mode 0600.
    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new 256-bit key (base64) to a new file of mode 0600; an existing file is never replaced."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The file to create.") var file: String

        /// The options that name a store mean nothing here: said so, not silently ignored.
        func validate() throws {
            try global.refuseStoreOptions(
                "`key generate` opens none: it writes a new key to FILE. Pass that file to --key-file later.")
        }

        func run() async throws {
            try Self.write(SymmetricKey(size: .bits256), to: file)
            Output.report(
                global, "Wrote a new key to \(file) (mode 0600). Use it with --key-file or LATCHKEY_KEY_FILE.",
                ["file": .string(file)])
        }
    }

    /// `latchkey key rotate`: seals every token, queued revocation and client secret again.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal the whole store, and the providers' client secrets, again under a new key, in one step.",
            discussion: """
                With the key file beside the database, or one named by --key-file, the new key replaces it \
                (atomically, after the store was sealed again). With --key-fd, name the new file the new key \
                goes to with --new-key-file (mode 0600), and give it to your secret manager. Other latchkey \
                processes may go on using the home: the rotation waits for a refresh under way, and they read \
                the new key from the key file (a key given by --key-fd is not re-read: start them again).
                """)
        @OptionGroup var global: GlobalOptions
        @Option(help: "With --key-fd: the new file the new key goes to.")
        var newKeyFile: String?

        func validate() throws {
            if global.keyDescriptor != nil, newKeyFile == nil {
                throw ValidationError("With --key-fd, name where the new key goes with --new-key-file.")
            }
            if global.keyDescriptor == nil, newKeyFile != nil {
                throw ValidationError("--new-key-file goes with --key-fd; a key file is replaced where it is.")
            }
        }

        func run() async throws {
            let home = global.location
            guard home.databaseURL == nil else {
                throw CLIError.input(
                    "key rotate seals a SQLite store again; a PostgreSQL store's key stays with its secret manager.")
            }
            if case .keyFileBesideDatabase = home.keySource, let location = try home.recordedKeyLocation(),
                !location.isPlainFile
            {
                throw CLIError.input(
                    "The store's key is in \(location.summary); key rotate replaces a key file. Move it to a file first (`latchkey key move --to file FILE`), rotate, and move it back."
                )
            }
            let newKey = SymmetricKey(size: .bits256)
            // The client secrets, opened with the old key and sealed under the new one, wait in
            // providers.json.next until the store is sealed again: all or nothing (see Home+Rotation).
            let storage = try await home.openSQLiteStorage()
            var providers = try await home.sealLegacySecrets(home.providers(), storage: storage)
            let next = Sealer(key: newKey)
            for index in providers.indices {
                for kept in ProviderEntry.sealedSecrets {
                    guard let sealed = providers[index][keyPath: kept.field] else { continue }
                    let purpose = kept.purpose(providers[index].name)
                    guard let secret = storage.open(sealedSecret: sealed, purpose: purpose) else {
                        throw CLIError.failed(
                            "A secret of the provider \(providers[index].name) does not open with the store's key, so it cannot be sealed again; add the provider again (or remove it) first. Nothing changed."
                        )
                    }
                    do {
                        providers[index][keyPath: kept.field] = try next.seal(secret: secret, purpose: purpose)
                    } catch {
                        throw CLIError.failed("A provider's secret cannot be sealed: \(error). Nothing changed.")
                    }
                }
            }
            try storage.close()
            try home.writePendingProviders(providers)

            // A new key file first: if it cannot be written, nothing has changed yet.
            // A descriptor's key was read once and is held in memory: rotation then writes no key
            // file of its own, and the new key goes to --new-key-file.
            let source = try await home.resolvedKeySource()
            if let newKeyFile { try KeyCommand.Generate.write(newKey, to: newKeyFile) }
            let rotated = Home(explicit: home.folder.path, keyFile: newKeyFile ?? keyFilePath(source))
            do {
                try await SQLiteCredentialStorage.rotateKey(path: home.databasePath, key: source, to: newKey)
            } catch {
                // Sealed again or not, the waiting list goes where it belongs (see Home+Rotation).
                if let reopened = try? await (newKeyFile == nil ? home : rotated).openSQLiteStorage() {
                    try? home.settlePendingProviders(with: reopened, discardingStale: true)
                }
                throw CLIError.failed("The store was not sealed again: \(error)")
            }
            try home.settlePendingProviders(with: try await rotated.openSQLiteStorage())
            Output.report(
                global,
                "Sealed the store again under a new key\(newKeyFile.map { ", written to \($0)" } ?? "").",
                ["keyFile": .string(newKeyFile ?? keyFilePath(source) ?? home.databasePath + ".key")])
        }

        private func keyFilePath(_ source: SQLiteCredentialStorage.KeySource) -> String? {
            switch source {
            case .keyFile(let path): path
            default: nil
            }
        }
    }
}

extension KeyCommand.Generate {
    /// Writes `key` as base64 to a new file of mode 0600.
    static func write(_ key: SymmetricKey, to file: String) throws {
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(file), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: .ownerReadWrite)
            defer { try? descriptor.close() }
            _ = try descriptor.writeAll(Array((key.withUnsafeBytes { Data($0) }.base64EncodedString() + "\n").utf8))
        } catch let error as Errno where error == .fileExists {
            throw CLIError.input("\(file) exists; Latchkey never replaces a key file.")
        } catch {
            throw CLIError.failed("\(file) cannot be written: \(error)")
        }
    }
}
