import LatchkeyCommandLine
import LatchkeyRecords
import LatchkeySQLiteReader

extension QuickCommand {
    /// `latchkey credential git get|store|erase`, as `CredentialCommand.Git` answers it. What it
    /// read of git's request goes to the full tool with the rest of the command.
    func git(_ operation: String, _ environment: [String: String]) -> QuickOutcome {
        let bytes: [UInt8]
        do {
            bytes = try GitCredentialRequest.readBytes()
        } catch {
            // The request is longer than git ever sends: said as the full tool says it.
            writeAll(STDERR_FILENO, Array("latchkey: \(TerminalText.safe(error.description))\n".utf8))
            exit(error.status.rawValue)
        }
        let request = GitCredentialRequest.parse(bytes)
        guard operation != "store", request.url != nil else { return .answered }
        guard operation == "get", let store = QuickStore(home: home, keyFile: keyFile, environment: environment),
            let providers = store.providers()
        else { return .handOver(input: bytes) }
        let entry: ProviderEntry
        switch GitHostRule.decide(request, providers: providers) {
        case .provider(let found): entry = found
        case .unknownHost, .notHTTP:
            // No provider names the host: no answer, and git asks its other helpers.
            return (try? store.reader.read { _ throws(SQLiteStoreReader.Unread) in }) != nil
                ? .answered : .handOver(input: bytes)
        case .plainHTTP:
            // Refused with a message: the full tool's.
            return .handOver(input: bytes)
        }
        guard
            let stored = try? store.reader.read({ snapshot throws(SQLiteStoreReader.Unread) in
                try Self.gitAccount(
                    of: entry, gitUsername: request.fields["username"],
                    named: AccountChoice.reference(nil, environment: environment), in: snapshot)
            }) ?? nil,
            stored.token.dpop == nil, store.hasProvider(for: stored, in: providers)
        else { return .handOver(input: bytes) }
        var token = stored.accessToken(minimumValidity: Self.defaultValidity, at: Date())
        var expiry = stored.token.expiresAt
        if token == nil, let refreshed = QuickAgent.refreshed(stored, of: store, environment) {
            (token, expiry) = (refreshed.token, refreshed.expiresAt)
        }
        guard let token, let answer = GitCredentialRequest.answer(for: stored.metadata, password: token, expiry: expiry)
        else { return .handOver(input: bytes) }
        Self.write(answer)
        return .answered
    }

    /// The account that answers for `entry`'s hosts, as the full tool chooses it
    /// (``AccountChoice/gitAccount(among:gitUsername:named:default:)``); `nil` when there is none
    /// (the full tool says why), or an account's provider is not in its tags (the full tool
    /// matches by issuer).
    private static func gitAccount(
        of entry: ProviderEntry, gitUsername: String?, named: String?, in snapshot: SQLiteStoreReader.Snapshot
    ) throws(SQLiteStoreReader.Unread) -> StoredCredential? {
        let all = try snapshot.accounts()
        let names = all.map { ProviderEntry.name(taggedOn: $0.metadata.tags) }
        guard !names.contains(nil) else { return nil }
        let accounts = zip(all, names).filter { $0.1 == entry.name }.map(\.0)
        let current = try snapshot.defaultCredentialID()
        guard
            case .success(let chosen) = AccountChoice.gitAccount(
                among: accounts, gitUsername: gitUsername, named: named, default: current)
        else { return nil }
        return try snapshot.credential(chosen.id)
    }
}
