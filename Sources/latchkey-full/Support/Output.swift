import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import NIOConcurrencyHelpers

extension CLIError {
    /// The tool's error for a provider failure: exit 4 when the account must sign in again.
    /// A resource's token refused (`invalid_target`, RFC 8707 §2): many providers issue one
    /// only for the resources named when the account signed in.
    static func resourceRefused(_ error: ProviderError, resource: URL, grant: [String]?) -> CLIError {
        let named = grant.map { "it was signed in for \($0.joined(separator: ", "))" } ?? "it was signed in for none"
        return CLIError(
            status: .failed,
            description:
                "The provider issues no token for \(resource.absoluteString) on this account's grant (\(error.oauthError?.rawValue ?? "refused"); \(named)). Sign in again naming it: `latchkey login --resource \(resource.absoluteString)` (through the browser: some providers, Glewlwyd among them, keep no resource on a password sign-in)."
        )
    }

    static func provider(_ error: ProviderError, doing what: String) -> CLIError {
        if error.requiresSignIn {
            return CLIError(
                status: .signInRequired, description: "\(what): the account must sign in again (\(error.reason))")
        }
        return CLIError(status: .failed, description: "\(what): \(error)")
    }
}

/// Shared flags: `--home` and `--json`.
struct GlobalOptions: ParsableArguments {
    @Option(
        help:
            "The Latchkey home (one home is one device). Default: $LATCHKEY_HOME, then $XDG_CONFIG_HOME/latchkey, then ~/.config/latchkey."
    )
    var home: String?

    @Flag(help: "Print one JSON document instead of text.")
    var json = false

    @Option(
        help:
            "The store's key, kept elsewhere: a file holding 32 bytes or their base64. Default: $LATCHKEY_KEY_FILE, then the key file beside the database."
    )
    var keyFile: String?

    @Option(
        name: .customLong("key-fd"),
        help: "Read the store's key from this open file descriptor (a secret manager's pipe).")
    var keyDescriptor: Int32?

    @Option(
        help:
            "Keep the credentials in this PostgreSQL store (postgres://USER@HOST[:PORT]/DATABASE), shared by every instance that names it, with its key from --key-file or $LATCHKEY_KEY_FILE, waited for $LATCHKEY_DATABASE_TIMEOUT seconds (5). Default: $LATCHKEY_DATABASE_URL, then the SQLite store in the home."
    )
    var store: String?

    @Option(
        name: .customLong("passphrase-fd"),
        help:
            "Read the passphrase of a passphrase-sealed key file (`key move --to file FILE --passphrase`) from this open file descriptor; default: asked on the terminal."
    )
    var passphraseDescriptor: Int32?

    /// Refuses the options that name a store, for a command that opens none: said so, not
    /// silently ignored. `why` finishes the sentence.
    func refuseStoreOptions(_ why: String) throws {
        let given = [
            ("--home", home != nil), ("--store", store != nil), ("--key-file", keyFile != nil),
            ("--key-fd", keyDescriptor != nil), ("--passphrase-fd", passphraseDescriptor != nil),
        ].filter(\.1).map(\.0)
        guard given.isEmpty else {
            throw ValidationError(
                "\(given.joined(separator: ", ")) name\(given.count == 1 ? "s" : "") a store; \(why)")
        }
    }

    var location: Home {
        Home(
            explicit: home, keyFile: keyFile, keyDescriptor: keyDescriptor, store: store,
            passphraseDescriptor: passphraseDescriptor)
    }
}

/// Writes the tool's output: text for people, or one JSON document.
enum Output {
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    static var useColor: Bool {
        isTerminal && ProcessInfo.processInfo.environment["NO_COLOR"].map(\.isEmpty) ?? true
    }

    /// Prints a line. Control characters are escaped: a line may carry text a provider chose
    /// (an error description, a claim), which must not move the cursor or rewrite the terminal.
    static func line(_ text: String) {
        writeAll(STDOUT_FILENO, safe(text) + "\n")
    }

    /// Prints a line that starts with a ✓ or ✗ mark, in colour on a terminal (the only escape
    /// sequences the tool writes itself); the text is escaped as ``line(_:)`` does.
    static func line(mark ok: Bool, _ text: String) {
        writeAll(STDOUT_FILENO, mark(ok) + " " + safe(text) + "\n")
    }

    static func error(_ text: String) {
        writeAll(STDERR_FILENO, "latchkey: " + safe(text) + "\n")
    }

    /// A line for the user on standard error (standard output stays for the result), escaped as
    /// ``line(_:)`` is.
    static func note(_ text: String) {
        writeAll(STDERR_FILENO, safe(text) + "\n")
    }

    /// Lines a person must read to go on (a device code, a URL to open): on standard error, and
    /// also on the terminal (`/dev/tty`) when standard error is not one — a helper run by git
    /// or an editor has its standard error captured, where nobody reads it in time.
    static func instructions(_ lines: [String]) {
        let text = lines.map { safe($0) + "\n" }.joined()
        writeAll(STDERR_FILENO, text)
        guard !errorIsTerminal else { return }
        let terminal = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else { return }
        writeAll(terminal, text)
        close(terminal)
    }

    /// Progress for people on a terminal; nothing on a pipe.
    static func progress(_ text: String) {
        guard errorIsTerminal else { return }
        writeAll(STDERR_FILENO, "\r\u{1B}[2K" + text)
    }

    static func endProgress() {
        guard errorIsTerminal else { return }
        writeAll(STDERR_FILENO, "\n")
    }

    /// Prints `value` as one line of JSON, valid JSON whatever text it carries (see
    /// ``TerminalText/json(_:)``: the characters a terminal would act on are JSON escapes).
    static func json(_ value: some Encodable) {
        writeAll(STDOUT_FILENO, jsonText(value) + "\n")
    }

    /// Prints one row of a listing: `fields` escaped (a tab in a field too), separated by tabs.
    static func row(_ fields: [String]) {
        writeAll(STDOUT_FILENO, TerminalText.row(fields) + "\n")
    }

    /// `value` as one line of JSON (keys sorted, dates in ISO 8601).
    static func jsonText(_ value: some Encodable) -> String { TerminalText.json(value) }

    /// Prints `message` as text, or `{"message": …}` plus `fields` as JSON.
    static func report(_ options: GlobalOptions, _ message: String, _ fields: [String: JSONValue] = [:]) {
        if options.json {
            var object = fields
            object["message"] = .string(message)
            json(object)
        } else {
            line(message)
        }
    }

    /// Text that came from a provider or a file, made safe for a terminal (see
    /// ``TerminalText/safe(_:keepingLines:)``).
    static func safe(_ text: String, keepingLines: Bool = false) -> String {
        TerminalText.safe(text, keepingLines: keepingLines)
    }

    private static func mark(_ ok: Bool) -> String {
        guard useColor else { return ok ? "✓" : "✗" }
        return ok ? "\u{1B}[32m✓\u{1B}[0m" : "\u{1B}[31m✗\u{1B}[0m"
    }
}

/// Reads a secret from standard input (one line, without the newline). On a terminal it turns
/// echo off, then asks on standard error, so the secret never shows. What was typed ahead is kept:
/// a script, `expect` or a password manager answers as soon as the prompt shows, and echo goes off
/// and comes back without flushing the terminal's input (`TCSANOW`, not `TCSAFLUSH`).
func readSecretFromStandardInput(_ what: String) throws -> String {
    try withEchoOff(STDIN_FILENO) { terminal in
        if terminal {
            writeAll(STDERR_FILENO, "\(what.prefix(1).uppercased() + what.dropFirst()): ")
        }
        defer { if terminal { writeAll(STDERR_FILENO, "\n") } }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw CLIError.input("Expected the \(what) on standard input.")
        }
        return line
    }
}

/// Runs `body` with echo off on `descriptor` when it is a terminal (`body` is told whether it
/// is), and echo as it was afterwards; typed-ahead input is kept (`TCSANOW`).
///
/// A signal that ends the process meanwhile (Ctrl-C at the prompt) puts echo back first
/// (``SignalDeferral`` asks ``TerminalEcho/restore()``).
func withEchoOff<T>(_ descriptor: Int32, _ body: (Bool) throws -> T) rethrows -> T {
    var saved = termios()
    let terminal = isatty(descriptor) == 1 && tcgetattr(descriptor, &saved) == 0
    if terminal {
        TerminalEcho.saved.withLockedValue { $0 = TerminalEcho.Saved(descriptor: descriptor, settings: saved) }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(descriptor, TCSANOW, &silent)
    }
    defer {
        if terminal {
            _ = tcsetattr(descriptor, TCSANOW, &saved)
            TerminalEcho.saved.withLockedValue { $0 = nil }
        }
    }
    return try body(terminal)
}

/// The terminal settings a prompt turned echo off from, while it does.
enum TerminalEcho {
    struct Saved: @unchecked Sendable {
        // Sendable by hand: `termios` is a plain C struct of integers, copied by value.
        var descriptor: Int32
        var settings: termios
    }

    static let saved = NIOLockedValueBox<Saved?>(nil)

    /// Puts the settings back, when a prompt has echo off.
    static func restore() {
        guard var saved = saved.withLockedValue({ $0 }) else { return }
        _ = tcsetattr(saved.descriptor, TCSANOW, &saved.settings)
    }
}
