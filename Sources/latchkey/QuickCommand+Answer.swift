import LatchkeyCommandLine
import LatchkeyRecords
import LatchkeySQLiteReader

/// What the quick path did with a command.
enum QuickOutcome {
    /// It answered (exit 0).
    case answered
    /// The full tool answers; `input` is what was read of standard input already (git's request).
    case handOver(input: [UInt8]?)
}

extension QuickCommand {
    /// The margin the library refreshes within when none is asked for (`accessToken()`,
    /// `idToken()`), as the full tool asks.
    static let defaultValidity: TimeInterval = 60

    func answer(environment: [String: String]) -> QuickOutcome {
        switch kind {
        case .token(let account, let validity, let format, let idToken):
            return token(account: account, validity: validity, format: format, idToken: idToken, environment)
        case .git(let operation):
            return git(operation, environment)
        case .kubectl(let account, let accessToken):
            return kubectl(account: account, accessToken: accessToken, environment)
        }
    }

    /// `latchkey token`, as `TokenCommand` prints it.
    private func token(
        account: String?, validity: TokenValidity?, format: TokenFormat?, idToken: Bool, _ environment: [String: String]
    ) -> QuickOutcome {
        // With an agent, the token alone is its answer: no store to open here. Once asked, it is
        // not asked again below: its refusal would be the same.
        let tokenAlone = format ?? (json ? .json : .token) == .token
        if tokenAlone, let value = agentToken(account, validity, idToken, environment) {
            Self.write(TerminalText.safe(value) + "\n")
            return .answered
        }
        guard let (store, stored) = read(account, environment) else { return .handOver(input: nil) }
        let now = Date()
        // The library's own rules (`idToken()`, `accessToken(validFor:)`, `accessToken()`); a
        // bound token comes with a note on how to send it, which is the full tool's.
        var token = stored.token
        var value: String? =
            if idToken {
                stored.idToken(minimumValidity: validity?.seconds ?? Self.defaultValidity, at: now)
            } else if stored.token.dpop != nil {
                nil
            } else if let validity {
                stored.accessToken(validFor: validity.seconds, at: now)
            } else {
                stored.accessToken(minimumValidity: Self.defaultValidity, at: now)
            }
        // To be refreshed: by the agent, when one runs for this store (the formats that print
        // more than the token, which the store's record describes).
        if value == nil, !tokenAlone,
            let (given, expiresAt) = QuickAgent.refreshed(
                stored, of: store, idToken: idToken, validity: validity?.seconds, environment)
        {
            value = given
            if idToken {
                token.idToken = given
            } else {
                (token.accessToken, token.expiresAt) = (given, expiresAt)
            }
        }
        guard let value else { return .handOver(input: nil) }
        let description = TokenDescription(
            token: value, idToken: idToken, stored: token, resource: nil,
            key: ResourceToken.key(resource: nil, scopes: nil),
            account: stored.metadata.displayName ?? stored.id.rawValue)
        switch format ?? (json ? .json : .token) {
        case .token: Self.write(TerminalText.safe(value) + "\n")
        case .json: Self.write(TerminalText.json(description.fields) + "\n")
        case .export: Self.write(description.exportLines.map { TerminalText.safe($0) + "\n" }.joined())
        case .headers: Self.write(TerminalText.json(description.headers) + "\n")
        }
        return .answered
    }

    /// The token the agent for this home's store gives (`LATCHKEY_AGENT_SOCK`), valid or
    /// refreshed in the agent; `nil` when there is none, or it refuses (the store is read then).
    private func agentToken(
        _ account: String?, _ validity: TokenValidity?, _ idToken: Bool, _ environment: [String: String]
    ) -> String? {
        guard environment[QuickAgent.variable]?.isEmpty == false else { return nil }
        // A store here: the agent must keep that one. None (a remote host): the agent's own.
        let location = HomeLocation(explicit: home, keyFile: keyFile, environment: environment)
        let local = location.databaseURL != nil || FileManager.default.fileExists(atPath: location.databasePath)
        guard
            let answer = QuickAgent.ask(
                AgentRequest(
                    idToken ? .idToken : .token, account: AccountChoice.reference(account, environment: environment),
                    minimumValidity: validity?.seconds, store: local ? location.storeName : nil), environment)
        else { return nil }
        // With no store here, the agent's refusal is the answer (asking again would ask its
        // owner to confirm twice).
        if !local, let refusal = CLIError.refusal(answer) {
            writeAll(STDERR_FILENO, Array("latchkey: \(TerminalText.safe(refusal.description))\n".utf8))
            exit(refusal.status.rawValue)
        }
        guard answer.failure == nil,
            // A bound token comes with a note on a terminal: the full tool's.
            idToken || answer.tokenType?.lowercased() != "dpop" || isatty(STDERR_FILENO) != 1
        else { return nil }
        return answer.token
    }

    /// `latchkey credential kubectl`, as `CredentialCommand.Kubectl` prints it.
    private func kubectl(account: String?, accessToken: Bool, _ environment: [String: String]) -> QuickOutcome {
        guard let (store, stored) = read(account, environment) else { return .handOver(input: nil) }
        let now = Date()
        var value: String?
        var expiry: Date?
        if accessToken {
            guard stored.token.dpop == nil else { return .handOver(input: nil) }
            value = stored.accessToken(minimumValidity: Self.defaultValidity, at: now)
            expiry = stored.token.expiresAt
        } else {
            value = stored.idToken(minimumValidity: Self.defaultValidity, at: now)
            expiry = stored.token.idTokenExpiresAt
        }
        if value == nil, let refreshed = QuickAgent.refreshed(stored, of: store, idToken: !accessToken, environment) {
            (value, expiry) = (refreshed.token, refreshed.expiresAt)
        }
        let apiVersion = ExecCredential.apiVersion(execInfo: environment["KUBERNETES_EXEC_INFO"])
        guard let value, let json = try? ExecCredential(apiVersion: apiVersion, token: value, expiry: expiry).json
        else { return .handOver(input: nil) }
        Self.write(String(decoding: json, as: UTF8.self))
        return .answered
    }

    /// The account `reference` names, with a provider the full tool would find for it.
    private func read(_ reference: String?, _ environment: [String: String]) -> (QuickStore, StoredCredential)? {
        guard let store = QuickStore(home: home, keyFile: keyFile, environment: environment),
            let providers = store.providers(),
            let stored = try? store.reader.read({ snapshot throws(SQLiteStoreReader.Unread) in
                try QuickStore.account(AccountChoice.reference(reference, environment: environment), in: snapshot)
            }) ?? nil,
            store.hasProvider(for: stored, in: providers)
        else { return nil }
        return (store, stored)
    }

    /// Writes all of `text` to standard output.
    static func write(_ text: String) {
        writeAll(STDOUT_FILENO, Array(text.utf8))
    }
}
