/// Where a Latchkey home is (one home is one device), and where its store and its store's key
/// are: what every command of the tool, quick or not, agrees on.
package struct HomeLocation: Sendable {
    /// Where the store's key comes from, as the options and the environment say (a location
    /// `key move` recorded in the home comes after these; see ``KeyLocation``).
    package enum KeyChoice: Sendable, Equatable {
        /// The key file beside the SQLite database (or where `key move` put the key).
        case besideDatabase
        /// `--key-file`, else `$LATCHKEY_KEY_FILE`.
        case file(String)
        /// `--key-fd`: read once per process from this open file descriptor.
        case descriptor(Int32)
    }

    /// The home folder.
    package let folder: URL
    /// The PostgreSQL store's URL (`--store`, else `$LATCHKEY_DATABASE_URL`), or nil for the
    /// SQLite store in the home folder.
    package let databaseURL: String?
    /// Where the store's key comes from.
    package let key: KeyChoice
    /// `--passphrase-fd`: where the passphrase of a passphrase-sealed key file comes from.
    package let passphraseDescriptor: Int32?

    /// The environment variables a home's location is read from (a caller that reads the
    /// environment variable by variable passes these).
    package static let variables = [
        "LATCHKEY_DATABASE_URL", "LATCHKEY_HOME", "XDG_CONFIG_HOME", "HOME", "LATCHKEY_KEY_FILE",
    ]

    /// `--home`, else `$LATCHKEY_HOME`, else `$XDG_CONFIG_HOME/latchkey`, else
    /// `$HOME/.config/latchkey`, else the user database's home (no `HOME` set) `/.config/latchkey`.
    /// The key: `--key-fd`, else `--key-file`, else `$LATCHKEY_KEY_FILE`, else the home's.
    package init(
        explicit: String?, keyFile: String? = nil, keyDescriptor: Int32? = nil, store: String? = nil,
        passphraseDescriptor: Int32? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        self.passphraseDescriptor = passphraseDescriptor
        databaseURL = store ?? nonEmpty("LATCHKEY_DATABASE_URL")
        // Every path here is a folder's, said so: a URL not told asks the file system (a
        // `stat` per component, at every quick answer).
        if let explicit {
            folder = URL(filePath: explicit, directoryHint: .isDirectory)
        } else if let home = nonEmpty("LATCHKEY_HOME") {
            folder = URL(filePath: home, directoryHint: .isDirectory)
        } else if let config = nonEmpty("XDG_CONFIG_HOME") {
            folder = URL(filePath: config, directoryHint: .isDirectory).appending(
                path: "latchkey", directoryHint: .isDirectory)
        } else if let home = nonEmpty("HOME") {
            // As the XDG base directories are defined; the user database (which reading costs
            // a look at nsswitch.conf and passwd) only when there is no HOME.
            folder = URL(filePath: home, directoryHint: .isDirectory).appending(
                path: ".config/latchkey", directoryHint: .isDirectory)
        } else {
            folder = FileManager.default.homeDirectoryForCurrentUser.appending(
                path: ".config/latchkey", directoryHint: .isDirectory)
        }
        if let keyDescriptor {
            key = .descriptor(keyDescriptor)
        } else if let file = keyFile ?? nonEmpty("LATCHKEY_KEY_FILE") {
            key = .file(file)
        } else {
            key = .besideDatabase
        }
    }

    /// The SQLite database.
    package var databasePath: String { folder.appending(path: "credentials.sqlite", directoryHint: .notDirectory).path }
    /// The store by name: the PostgreSQL store's URL, else the SQLite database's path (what a
    /// process tells `latchkey agent` it reads, so that the agent answers for its own only).
    package var storeName: String { databaseURL ?? databasePath }
    /// The key file beside it.
    package var keyFileBesideDatabase: String { databasePath + ".key" }
    /// The configured providers.
    package var providersFile: URL { folder.appending(path: "providers.json", directoryHint: .notDirectory) }
    /// The provider list a key rotation left waiting (sealed under the new key).
    package var pendingProvidersFile: URL {
        folder.appending(path: "providers.json.next", directoryHint: .notDirectory)
    }
    /// Where `key move` recorded the key's place.
    package var keyLocationFile: URL { folder.appending(path: "key-location.json", directoryHint: .notDirectory) }
}
