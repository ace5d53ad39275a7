package import LatchkeyRecords

/// Which account a command uses, decided the same way by both halves of the tool: a pure value
/// over the accounts, tested without a store.
package enum AccountChoice {
    /// The environment variable that names the account for every command that takes one and
    /// was given none (`--account`, or the command's ACCOUNT argument, wins), without changing
    /// the default.
    package static let variable = "LATCHKEY_ACCOUNT"

    /// The account a command was told to use: its own argument, else `LATCHKEY_ACCOUNT` (when
    /// not empty); `nil` for the default account.
    package static func reference(_ given: String?, environment: [String: String]) -> String? {
        given ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether `account` is the one `reference` names: its id, username or email.
    package static func matches(_ account: AccountSummary, _ reference: String) -> Bool {
        account.id.rawValue == reference || account.metadata.preferredUsername == reference
            || account.metadata.email == reference
    }

    /// Why no account answers for a git host.
    package enum GitProblem: Error, Equatable, Sendable {
        /// The provider has no account (named `reference`, when one was named).
        case none(named: String?)
        /// The provider has several, none of them the default, and none was named.
        case several
    }

    /// The account that answers for a git host among `accounts` (the host's provider's): the one
    /// git's `username` names (from `credential.<url>.username` or the URL) when it names one of
    /// them — a username that names none, such as `oauth2`, is only git's; else the one
    /// `reference` (`LATCHKEY_ACCOUNT`) names, which must be one of them; else the default
    /// account when it is one of them; else the only one.
    package static func gitAccount(
        among accounts: [AccountSummary], gitUsername: String?, named reference: String?, default current: CredentialID?
    ) -> Result<AccountSummary, GitProblem> {
        if let gitUsername {
            let named = accounts.filter { matches($0, gitUsername) }
            if named.count == 1, let account = named.first { return .success(account) }
        }
        if let reference {
            let named = accounts.filter { matches($0, reference) }
            guard named.count == 1, let account = named.first else { return .failure(.none(named: reference)) }
            return .success(account)
        }
        if let current, let account = accounts.first(where: { $0.id == current }) { return .success(account) }
        if accounts.count == 1, let only = accounts.first { return .success(only) }
        return .failure(accounts.isEmpty ? .none(named: nil) : .several)
    }
}
