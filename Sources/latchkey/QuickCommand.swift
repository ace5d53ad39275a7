import LatchkeyCommandLine

/// A command the quick path may answer, read from the arguments as the full tool's parser
/// would read them (``QuickGrammar``); `nil` for anything else — another command, an option it
/// does not take, a value the full tool would refuse — which the full tool then parses and
/// answers itself.
struct QuickCommand {
    enum Kind {
        /// `token [ACCOUNT] [--account A] [--min-validity D] [--format F] [--id-token]`.
        case token(account: String?, minimumValidity: TokenValidity?, format: TokenFormat?, idToken: Bool)
        /// `credential git get|store|erase`.
        case git(operation: String)
        /// `credential kubectl [--account A] [--token id|access]`.
        case kubectl(account: String?, accessToken: Bool)
    }

    var kind: Kind
    /// `--home`.
    var home: String?
    /// `--key-file`.
    var keyFile: String?
    /// `--json`.
    var json: Bool

    init?(arguments: [String]) {
        var options: [String: String] = [:]
        var flags: Set<String> = []
        var words: [String] = []
        let valued = QuickGrammar.commands.reduce(QuickGrammar.sharedOptions) { $0.union($1.options) }
        let flagNames = QuickGrammar.commands.reduce(QuickGrammar.sharedFlags) { $0.union($1.flags) }
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-") else {
                words.append(argument)
                continue
            }
            // `--name=value` or `--name value`; anything else (short options, `--`, an option of
            // the full tool's alone) is the full tool's to parse.
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            if flagNames.contains(name), parts.count == 1 {
                guard flags.insert(name).inserted else { return nil }
            } else if valued.contains(name) {
                let value: String
                if parts.count == 2 {
                    value = String(parts[1])
                } else {
                    guard index < arguments.endIndex else { return nil }
                    value = arguments[index]
                    index += 1
                }
                guard !value.hasPrefix("-"), options.updateValue(value, forKey: name) == nil else { return nil }
            } else {
                return nil
            }
        }
        // The command the words name, and its own options and flags only.
        guard
            let command = QuickGrammar.commands.first(where: {
                words.starts(with: $0.words) && words.count <= $0.words.count + $0.positionals
            }),
            Set(options.keys).isSubset(of: command.options.union(QuickGrammar.sharedOptions)),
            flags.isSubset(of: command.flags.union(QuickGrammar.sharedFlags))
        else { return nil }
        let positionals = Array(words.dropFirst(command.words.count))
        home = options["--home"]
        keyFile = options["--key-file"]
        json = flags.contains("--json")
        switch command {
        case QuickGrammar.token:
            let validity = options["--min-validity"].map(TokenValidity.init(text:))
            let format = options["--format"].map(TokenFormat.init(rawValue:))
            // A value the full tool refuses, or `--json` with another format: its usage error.
            guard validity != .some(nil), format != .some(nil) else { return nil }
            if json, let format = format ?? nil, format != .json { return nil }
            if format == .some(.headers), flags.contains("--id-token") { return nil }
            // ACCOUNT and --account naming two accounts: the full tool's usage error.
            if let named = options["--account"], let positional = positionals.first, named != positional {
                return nil
            }
            kind = .token(
                account: options["--account"] ?? positionals.first, minimumValidity: validity ?? nil,
                format: format ?? nil, idToken: flags.contains("--id-token"))
        case QuickGrammar.git:
            guard !json, let operation = positionals.first, ["get", "store", "erase"].contains(operation) else {
                return nil
            }
            kind = .git(operation: operation)
        case QuickGrammar.kubectl:
            guard !json else { return nil }
            let token = options["--token"] ?? "id"
            guard token == "id" || token == "access" else { return nil }
            kind = .kubectl(account: options["--account"], accessToken: token == "access")
        default:
            return nil
        }
    }
}
