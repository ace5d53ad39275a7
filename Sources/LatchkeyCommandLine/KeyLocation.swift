/// Where a home keeps its store's key when it is not the key file beside the database: written
/// by `latchkey key move` to `key-location.json`, and used whenever no `--key-fd`, `--key-file`
/// or `$LATCHKEY_KEY_FILE` names another.
package enum KeyLocation: Equatable, Sendable {
    /// The desktop keyring (``DesktopKeyring``).
    case keyring
    /// A key file elsewhere (32 bytes or their base64).
    case file(String)
    /// A key file sealed under a passphrase (``PassphraseKeyFile``).
    case passphraseFile(String)

    private struct Record: Codable {
        var kind: String
        var path: String?
    }

    package init(json data: Data, path: String) throws {
        guard let record = try? JSONDecoder().decode(Record.self, from: data) else {
            throw CLIError.failed(
                "\(path) is damaged: it should say where the store's key is kept. Nothing was changed.")
        }
        switch (record.kind, record.path) {
        case ("keyring", _): self = .keyring
        case ("file", let path?): self = .file(path)
        case ("passphrase-file", let path?): self = .passphraseFile(path)
        default:
            throw CLIError.failed("\(path) names a key location this version does not know: \(record.kind).")
        }
    }

    package var json: Data {
        let record: Record
        switch self {
        case .keyring: record = Record(kind: "keyring")
        case .file(let path): record = Record(kind: "file", path: path)
        case .passphraseFile(let path): record = Record(kind: "passphrase-file", path: path)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(record)) ?? Data()
    }

    /// Whether the key is a plain key file (which `key rotate` can replace).
    package var isPlainFile: Bool {
        if case .file = self { true } else { false }
    }

    /// For people: where the key is.
    package var summary: String {
        switch self {
        case .keyring: "the desktop keyring"
        case .file(let path): path
        case .passphraseFile(let path): "\(path) (sealed under a passphrase)"
        }
    }
}

extension HomeLocation {
    /// Where `key move` put the key, or `nil` for the key file beside the database.
    /// The record is trusted as `providers.json` is (``readTrustedFile(_:what:limit:)``): it says
    /// which file opens the store.
    package func recordedKeyLocation() throws -> KeyLocation? {
        let path = keyLocationFile.path
        guard let bytes = try readTrustedFile(path, what: "The key's location record", limit: 64 << 10) else {
            return nil
        }
        return try KeyLocation(json: Data(bytes), path: path)
    }
}
