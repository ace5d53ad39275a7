/// What the quick path (`latchkey`) parses of the commands it may answer, as the full tool's
/// parser (swift-argument-parser, `latchkey-full`) reads them. Anything else — another command,
/// an option not listed, a short option, `--` — the quick path hands to the full tool to parse.
///
/// A test reads the full tool's own description of itself (`--experimental-dump-help`) and
/// checks that every option named here is an option (a value follows) or a flag there, for the
/// same command, so that the two parsers cannot drift.
package enum QuickGrammar {
    /// One command: its words, the options that take a value, the flags, and how many
    /// positional arguments it takes at most.
    package struct Command: Sendable, Hashable {
        package var words: [String]
        package var options: Set<String>
        package var flags: Set<String>
        package var positionals: Int
    }

    /// The options every command takes (the full tool declares them on each).
    package static let sharedOptions: Set<String> = ["--home", "--key-file"]
    /// The flags every command takes.
    package static let sharedFlags: Set<String> = ["--json"]

    /// `token [ACCOUNT] [--account A] [--min-validity D] [--format F] [--id-token]`.
    package static let token = Command(
        words: ["token"], options: ["--account", "--min-validity", "--format"], flags: ["--id-token"], positionals: 1)
    /// `credential git get|store|erase`.
    package static let git = Command(words: ["credential", "git"], options: [], flags: [], positionals: 1)
    /// `credential kubectl [--account A] [--token id|access]`.
    package static let kubectl = Command(
        words: ["credential", "kubectl"], options: ["--account", "--token"], flags: [], positionals: 0)

    /// Every command the quick path parses.
    package static let commands = [token, git, kubectl]
}
