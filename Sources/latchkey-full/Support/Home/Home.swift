import Foundation
import LatchkeyCommandLine
import LatchkeySQLite

/// One Latchkey home (one "device"): the credential store and the configured providers, where
/// ``HomeLocation`` (shared with the tool's quick commands) says they are.
struct Home {
    /// The tag that names the provider a credential was signed in with.
    static let providerTag = ProviderEntry.tag

    let location: HomeLocation

    var folder: URL { location.folder }
    var databaseURL: String? { location.databaseURL }
    var passphraseDescriptor: Int32? { location.passphraseDescriptor }
    var databasePath: String { location.databasePath }
    var providersFile: URL { location.providersFile }

    /// Where the store's key comes from.
    var keySource: SQLiteCredentialStorage.KeySource {
        switch location.key {
        case .besideDatabase: .keyFileBesideDatabase
        case .file(let path): .keyFile(path)
        case .descriptor(let number): .fileDescriptor(number)
        }
    }

    /// See ``HomeLocation/init(explicit:keyFile:keyDescriptor:store:passphraseDescriptor:environment:)``;
    /// where `key move` put the key is ``recordedKeyLocation()``.
    init(
        explicit: String?, keyFile: String? = nil, keyDescriptor: Int32? = nil, store: String? = nil,
        passphraseDescriptor: Int32? = nil
    ) {
        location = HomeLocation(
            explicit: explicit, keyFile: keyFile, keyDescriptor: keyDescriptor, store: store,
            passphraseDescriptor: passphraseDescriptor)
    }
}
