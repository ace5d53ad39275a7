import LatchkeyCommandLine
import LatchkeyRecords
import LatchkeySQLiteReader

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
        guard let (_, stored) = read(account, environment) else { return .handOver(input: nil) }
        let now = Date()
        let value: String
        if idToken {
            guard let token = stored.token.idToken,
                stored.satisfies(.idToken(validity?.seconds ?? Self.defaultValidity), at: now)
            else { return .handOver(input: nil) }
            value = token
        } else {
            // A bound token comes with a note on how to send it: the full tool's.
            guard stored.token.dpop == nil, let token = stored.token.accessToken else { return .handOver(input: nil) }
            if let validity {
                // Asked for explicitly: exactly that long (`accessToken(validFor:)`).
                guard !stored.token.expires(within: validity.seconds, at: now),
                    !stored.needsRefresh(minimumValidity: 0, at: now)
                else { return .handOver(input: nil) }
            } else {
                guard !stored.needsRefresh(minimumValidity: Self.defaultValidity, at: now) else {
                    return .handOver(input: nil)
                }
            }
            value = token
        }
        let description = TokenDescription(
            token: value, idToken: idToken, stored: stored.token, resource: nil,
            key: ResourceToken.key(resource: nil, scopes: nil),
            account: stored.metadata.displayName ?? stored.id.rawValue)
        switch format ?? (json ? .json : .token) {
        case .token: Self.write(TerminalText.safe(value) + "\n")
        case .json: Self.write(TerminalText.safe(TerminalText.json(description.fields)) + "\n")
        case .export: Self.write(description.exportLines.map { TerminalText.safe($0) + "\n" }.joined())
        }
        return .answered
    }

    /// `latchkey credential kubectl`, as `CredentialCommand.Kubectl` prints it.
    private func kubectl(account: String?, accessToken: Bool, _ environment: [String: String]) -> QuickOutcome {
        guard let (_, stored) = read(account, environment) else { return .handOver(input: nil) }
        let now = Date()
        let value: String?
        let expiry: Date?
        if accessToken {
            guard stored.token.dpop == nil, !stored.needsRefresh(minimumValidity: Self.defaultValidity, at: now) else {
                return .handOver(input: nil)
            }
            (value, expiry) = (stored.token.accessToken, stored.token.expiresAt)
        } else {
            guard stored.satisfies(.idToken(Self.defaultValidity), at: now) else { return .handOver(input: nil) }
            (value, expiry) = (stored.token.idToken, stored.token.idTokenExpiresAt)
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
                try QuickStore.account(reference, in: snapshot)
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

/// Writes all of `bytes` to `descriptor` (write(2) may write part of them, or be interrupted);
/// whether all were written.
@discardableResult
func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var rest = bytes[...]
    while !rest.isEmpty {
        let written = rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return false }
        rest = rest.dropFirst(written)
    }
    return true
}
