import ArgumentParser

/// The account a command works on: ACCOUNT or `--account` (one of them; both only when they
/// agree), else `LATCHKEY_ACCOUNT`, else the default account. Naming it never changes the default.
struct AccountArgument: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "An account id, username or email; $LATCHKEY_ACCOUNT, then the default account, if left out.",
            valueName: "account"),
        completion: Completions.accounts)
    var positional: String?
    @Option(
        name: .customLong("account"), help: "The account, as ACCOUNT names it (for scripts that name it everywhere).",
        completion: Completions.accounts)
    var option: String?

    func validate() throws {
        if let positional, let option, positional != option {
            throw ValidationError("Name the account once: ACCOUNT or --account, not two different ones.")
        }
    }

    /// The account named on the command line; `nil` leaves it to `LATCHKEY_ACCOUNT` and the default.
    var reference: String? { option ?? positional }
}

/// A command about one account, named by ``AccountArgument``.
protocol AccountCommand {
    /// ACCOUNT or `--account`.
    var accountArgument: AccountArgument { get }
}

extension AccountCommand {
    /// The account named on the command line; `nil` leaves it to `LATCHKEY_ACCOUNT` and the default.
    var account: String? { accountArgument.reference }
}
