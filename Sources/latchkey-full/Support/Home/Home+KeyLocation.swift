import Crypto
import Foundation
import Latchkey
import LatchkeyCommandLine
import NIOConcurrencyHelpers

extension Home {
    var keyLocationFile: URL { location.keyLocationFile }

    /// Where `key move` put the key, or `nil` for the key file beside the database.
    func recordedKeyLocation() throws -> KeyLocation? { try location.recordedKeyLocation() }

    /// Records `location` (replacing the record atomically), or removes the record for `nil`.
    func recordKeyLocation(_ location: KeyLocation?) throws {
        let path = keyLocationFile.path
        guard let location else {
            guard unlink(path) == 0 || errno == ENOENT else { throw CLIError.failed("\(path) cannot be removed.") }
            return
        }
        let next = path + ".next"
        unlink(next)
        do {
            try KeyFiles.writePrivateFile(at: next, bytes: Array(location.json))
        } catch {
            throw CLIError.failed("\(next) cannot be written: \(error)")
        }
        guard rename(next, path) == 0 else { throw CLIError.failed("\(path) cannot be written.") }
    }

    /// The key at a recorded location, read once per process.
    func key(at location: KeyLocation) async throws -> SymmetricKey {
        if let cached = Self.recordedKey.withLockedValue({ $0 }) { return cached }
        let key: SymmetricKey
        switch location {
        case .keyring:
            key = try await DesktopKeyring.key(for: databasePath)
        case .file(let path):
            do {
                key = try StoreKey.read(fromFile: path)
            } catch {
                throw CLIError.failed("The store's key cannot be read from \(path): \(error)")
            }
        case .passphraseFile(let path):
            let file = try PassphraseKeyFile.read(path)
            key = try file.open(passphrase: try readPassphrase(for: path), path: path)
        }
        Self.recordedKey.withLockedValue { $0 = key }
        return key
    }

    private static let recordedKey = NIOLockedValueBox<SymmetricKey?>(nil)

    /// The passphrase: from `--passphrase-fd`, else asked on the terminal without echo (on
    /// `/dev/tty`, since standard input may be another program's, as git's is; on standard input
    /// when that is a terminal and the process has no controlling one), else an error.
    func readPassphrase(for path: String, confirming: Bool = false) throws -> String {
        if let descriptor = passphraseDescriptor {
            // Read once, then closed: nothing started later inherits the pipe.
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            let data = (try? handle.readToEnd()) ?? Data()
            try? handle.close()
            let text = String(decoding: data, as: UTF8.self)
            let line = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            guard !line.isEmpty else {
                throw CLIError.input("No passphrase came from file descriptor \(descriptor).")
            }
            return line
        }
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 || isatty(STDIN_FILENO) == 1 else {
            throw CLIError.input(
                "The store's key in \(path) is sealed under a passphrase: run on a terminal, or pass --passphrase-fd N."
            )
        }
        defer { if terminal >= 0 { close(terminal) } }
        func ask(_ what: String) throws -> String {
            guard terminal >= 0 else { return try readSecretFromStandardInput(what) }
            return Self.ask(terminal, what.prefix(1).uppercased() + what.dropFirst() + ": ")
        }
        let first = try ask("passphrase for \(path)")
        if confirming {
            guard try ask("the same passphrase again") == first else {
                throw CLIError.input("The two passphrases differ; nothing was changed.")
            }
        }
        guard !first.isEmpty else { throw CLIError.input("The passphrase is empty; nothing was changed.") }
        return first
    }

    /// Asks on the controlling terminal, without echo, for one line.
    private static func ask(_ terminal: Int32, _ prompt: String) -> String {
        withEchoOff(terminal) { _ in
            _ = prompt.withCString { write(terminal, $0, strlen($0)) }
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while read(terminal, &byte, 1) == 1, byte != 0x0A { bytes.append(byte) }
            _ = write(terminal, "\n", 1)
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
