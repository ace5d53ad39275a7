import LatchkeyCommandLine

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A command the quick path may answer, read from the arguments as the full tool's parser
/// would read them; `nil` for anything else — another command, an option it does not take, a
/// value the full tool would refuse — which the full tool then parses and answers itself.
struct QuickCommand {
    enum Kind {
        /// `token [ACCOUNT] [--min-validity D] [--format F] [--id-token]`.
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
        var positionals: [String] = []
        let valued: Set = ["--home", "--key-file", "--min-validity", "--format", "--account", "--token"]
        let flagNames: Set = ["--json", "--id-token"]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-") else {
                positionals.append(argument)
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
        home = options.removeValue(forKey: "--home")
        keyFile = options.removeValue(forKey: "--key-file")
        json = flags.remove("--json") != nil
        switch positionals.first {
        case "token":
            guard positionals.count <= 2, options.keys.allSatisfy(["--min-validity", "--format"].contains) else {
                return nil
            }
            let validity = options["--min-validity"].map(TokenValidity.init(text:))
            let format = options["--format"].map(TokenFormat.init(rawValue:))
            // A value the full tool refuses, or `--json` with another format: its usage error.
            guard validity != .some(nil), format != .some(nil) else { return nil }
            if json, let format = format ?? nil, format != .json { return nil }
            kind = .token(
                account: positionals.count == 2 ? positionals[1] : nil, minimumValidity: validity ?? nil,
                format: format ?? nil, idToken: flags.remove("--id-token") != nil)
        case "credential":
            guard flags.isEmpty, !json else { return nil }
            switch (positionals.count, positionals.dropFirst().first) {
            case (3, "git"):
                guard options.isEmpty, ["get", "store", "erase"].contains(positionals[2]) else { return nil }
                kind = .git(operation: positionals[2])
            case (2, "kubectl"):
                guard options.keys.allSatisfy(["--account", "--token"].contains) else { return nil }
                let token = options["--token"] ?? "id"
                guard token == "id" || token == "access" else { return nil }
                kind = .kubectl(account: options["--account"], accessToken: token == "access")
            default:
                return nil
            }
        default:
            return nil
        }
        guard flags.isEmpty else { return nil }
    }
}
