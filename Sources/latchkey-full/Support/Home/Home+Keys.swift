import Crypto
import Latchkey
import LatchkeyCommandLine
import LatchkeySQLite
import NIOConcurrencyHelpers

/// Where the store's key comes from: `--key-fd`, `--key-file`, `$LATCHKEY_KEY_FILE`, where
/// `key move` put it (the desktop keyring, a file, a passphrase-sealed file), or the key file
/// beside the SQLite database.
extension Home {
    /// The key source to open the store with: a descriptor's key is read once, then reused.
    func resolvedKeySource() async throws -> SQLiteCredentialStorage.KeySource {
        // A recorded location is the SQLite store's; a PostgreSQL store's key is named each time.
        if case .keyFileBesideDatabase = keySource, databaseURL == nil, let location = try recordedKeyLocation() {
            if case .file(let path) = location { return .keyFile(path) }
            return .key(try await key(at: location))
        }
        guard let keyDescriptor = keySource.descriptor else { return keySource }
        return .key(
            try Self.descriptorKey.withLockedValue { cached in
                if let cached { return cached }
                do {
                    let key = try StoreKey.read(fromDescriptor: keyDescriptor)
                    cached = key
                    return key
                } catch {
                    throw CLIError.failed("The key cannot be read from file descriptor \(keyDescriptor): \(error)")
                }
            })
    }

    private static let descriptorKey = NIOLockedValueBox<SymmetricKey?>(nil)

    /// The store's key as a value, for a store that keeps no key file of its own (PostgreSQL):
    /// from `--key-fd`, `--key-file` or `$LATCHKEY_KEY_FILE`.
    func resolvedKey() async throws -> SymmetricKey {
        switch try await resolvedKeySource() {
        case .key(let key):
            return key
        case .keyFile(let path):
            do {
                return try StoreKey.read(fromFile: path)
            } catch {
                throw CLIError.failed("The store's key cannot be read: \(error)")
            }
        default:
            throw CLIError.input(
                "A PostgreSQL store needs its key: set LATCHKEY_KEY_FILE (or --key-file, --key-fd) to a file holding it. Make one with `latchkey key generate FILE`."
            )
        }
    }
}

extension SQLiteCredentialStorage.KeySource {
    /// The descriptor the key is read from, when it is.
    var descriptor: Int32? {
        if case .fileDescriptor(let number) = self { number } else { nil }
    }
}
