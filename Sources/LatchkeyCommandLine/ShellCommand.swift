/// A command a message tells a person (or an AI agent) to run: its argument vector, and that
/// vector as one line a POSIX shell reads back word for word. A value that came from outside —
/// a server's `scope`, a URL, a provider's name — is always one quoted word, never code.
package struct ShellCommand: Sendable, Hashable, CustomStringConvertible {
    /// The words, the program first.
    package var arguments: [String]

    /// A command of `arguments`.
    package init(_ arguments: [String]) {
        self.arguments = arguments
    }

    /// The words joined for a shell: a word of only letters, digits and `-_./:=@,+%` as it is,
    /// every other one in single quotes (a quote in it as `'\''`). Control characters are quoted
    /// too, and then made visible (``TerminalText/safe(_:keepingLines:)``), so that the line
    /// cannot redraw a terminal; such a word no longer reads back as itself, which is the point.
    package var description: String {
        arguments.map(Self.word).joined(separator: " ")
    }

    private static let plain = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./:=@,+%".utf8)

    /// One word, quoted where a shell would read it otherwise.
    package static func word(_ value: String) -> String {
        if !value.isEmpty, value.utf8.allSatisfy(plain.contains), !value.hasPrefix("=") { return value }
        return TerminalText.safe(TokenDescription.quoted(value))
    }
}
