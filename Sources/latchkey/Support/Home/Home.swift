import Foundation
import LatchkeySQLite

/// One Latchkey home (one "device"): the credential store and the configured providers.
struct Home {
    /// The tag that names the provider a credential was signed in with.
    static let providerTag = "cli.provider"
    /// The same, as versions before the `latchkey.` tag prefix was Latchkey's own wrote it.
    static let legacyProviderTag = "latchkey.provider"

    let folder: URL
    /// The PostgreSQL store's URL (`--store`, else `$LATCHKEY_DATABASE_URL`), or nil for the
    /// SQLite store in the home folder.
    let databaseURL: String?
    /// Where the store's key comes from.
    let keySource: SQLiteCredentialStorage.KeySource
    /// `--passphrase-fd`: where the passphrase of a passphrase-sealed key file comes from.
    let passphraseDescriptor: Int32?
    var databasePath: String { folder.appendingPathComponent("credentials.sqlite").path }
    var providersFile: URL { folder.appendingPathComponent("providers.json") }

    /// `--home`, else `$LATCHKEY_HOME`, else `$XDG_CONFIG_HOME/latchkey`, else `~/.config/latchkey`.
    /// The key: `--key-fd`, else `--key-file`, else `$LATCHKEY_KEY_FILE`, else where `key move`
    /// put it (``recordedKeyLocation()``), else the key file beside the database.
    init(
        explicit: String?, keyFile: String? = nil, keyDescriptor: Int32? = nil, store: String? = nil,
        passphraseDescriptor: Int32? = nil
    ) {
        let environment = ProcessInfo.processInfo.environment
        self.passphraseDescriptor = passphraseDescriptor
        databaseURL = store ?? environment["LATCHKEY_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if let explicit {
            folder = URL(fileURLWithPath: explicit)
        } else if let home = environment["LATCHKEY_HOME"], !home.isEmpty {
            folder = URL(fileURLWithPath: home)
        } else if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            folder = URL(fileURLWithPath: config).appendingPathComponent("latchkey")
        } else {
            folder = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/latchkey")
        }
        if let keyDescriptor {
            // Read once per process (a pipe cannot be read twice), then kept in memory.
            keySource = .fileDescriptor(keyDescriptor)
        } else if let file = keyFile ?? environment["LATCHKEY_KEY_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            keySource = .keyFile(file)
        } else {
            keySource = .keyFileBesideDatabase
        }
    }
}
