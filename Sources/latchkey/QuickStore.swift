import LatchkeyCommandLine
import LatchkeyRecords
import LatchkeySQLiteReader

/// The home's SQLite store and provider list, read as the full tool reads them, when that is
/// all a command needs: `nil` (hand over) for a PostgreSQL store, a key kept anywhere but in a
/// plain key file, a key rotation cut short, or a store the reader does not answer for.
struct QuickStore {
    let location: HomeLocation
    let reader: SQLiteStoreReader

    init?(home: String?, keyFile: String?, environment: [String: String]) {
        location = HomeLocation(explicit: home, keyFile: keyFile, environment: environment)
        guard location.databaseURL == nil,
            !FileManager.default.fileExists(atPath: location.pendingProvidersFile.path)
        else { return nil }
        let keyPath: String
        switch location.key {
        case .file(let path):
            keyPath = path
        case .descriptor:
            return nil
        case .besideDatabase:
            // Unreadable or damaged, the record is reported by the full tool.
            let recorded: KeyLocation?
            do {
                recorded = try location.recordedKeyLocation()
            } catch {
                return nil
            }
            switch recorded {
            case nil: keyPath = location.keyFileBesideDatabase
            case .file(let path)?: keyPath = path
            case .keyring?, .passphraseFile?: return nil
            }
        }
        guard let reader = try? SQLiteStoreReader(path: location.databasePath, keyPath: keyPath) else { return nil }
        self.reader = reader
    }

    /// The configured providers; `nil` when the list cannot be read, or holds a client secret
    /// in the clear (the full tool seals it).
    func providers() -> [ProviderEntry]? {
        guard let data = try? location.readProvidersFile() else { return nil }
        guard let providers = try? JSONDecoder().decode([ProviderEntry].self, from: data),
            !providers.contains(where: { $0.clientSecret != nil })
        else { return nil }
        return providers
    }

    /// Whether the full tool would find a provider for `stored`'s tokens: a configured OpenID
    /// provider of the same issuer and client whose client secret, if it has one, opens.
    func hasProvider(for stored: StoredCredential, in providers: [ProviderEntry]) -> Bool {
        providers.contains { entry in
            guard entry.kind == .openid, entry.clientID == stored.token.provider.clientID,
                let issuer = entry.issuer.flatMap(URL.init(string:)),
                issuer.absoluteString == stored.token.provider.issuer
            else { return false }
            guard let sealed = entry.sealedClientSecret else { return true }
            return reader.openSecret(sealed, purpose: ProviderEntry.secretPurpose(entry.name)) != nil
        }
    }

    /// The account `reference` names (id, username or email; the default account when `nil`),
    /// with its tokens opened; `nil` when there is none, or more than one.
    static func account(_ reference: String?, in snapshot: SQLiteStoreReader.Snapshot) throws(SQLiteStoreReader.Unread)
        -> StoredCredential?
    {
        let id: CredentialID
        if let reference {
            let matches = try snapshot.accounts().filter { AccountChoice.matches($0, reference) }
            guard matches.count == 1, let match = matches.first else { return nil }
            id = match.id
        } else {
            guard let chosen = try snapshot.defaultCredentialID() else { return nil }
            id = chosen
        }
        return try snapshot.credential(id)
    }
}
