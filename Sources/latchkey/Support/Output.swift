import ArgumentParser
import Foundation
import Latchkey

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The tool's exit codes (the contract scripts rely on).
enum ExitStatus: Int32 {
    case success = 0
    /// Failed; for signout: still signed in.
    case failed = 1
    /// Usage or input error.
    case usage = 2
    /// signout: signed out here, but a server step failed or was queued.
    case partial = 3
    /// The account must sign in again.
    case signInRequired = 4
}

/// An error the tool reports in one line and maps to an exit status.
struct CLIError: Error, CustomStringConvertible {
    var status: ExitStatus
    var description: String

    static func input(_ message: String) -> CLIError { CLIError(status: .usage, description: message) }
    static func failed(_ message: String) -> CLIError { CLIError(status: .failed, description: message) }

    /// The tool's error for a provider failure: exit 4 when the account must sign in again.
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
        name: .customLong("key-file"),
        help:
            "The store's key, kept elsewhere: a file holding 32 bytes or their base64. Default: $LATCHKEY_KEY_FILE, then the key file beside the database."
    )
    var keyFile: String?

    @Option(
        name: .customLong("key-fd"),
        help: "Read the store's key from this open file descriptor (a secret manager's pipe).")
    var keyDescriptor: Int32?

    var location: Home { Home(explicit: home, keyFile: keyFile, keyDescriptor: keyDescriptor) }
}

/// Writes the tool's output: text for people, or one JSON document.
enum Output {
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    static var useColor: Bool {
        isTerminal && ProcessInfo.processInfo.environment["NO_COLOR"].map(\.isEmpty) ?? true
    }

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("latchkey: " + text + "\n").utf8))
    }

    /// Progress for people on a terminal; nothing on a pipe.
    static func progress(_ text: String) {
        guard errorIsTerminal else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
    }

    static func endProgress() {
        guard errorIsTerminal else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }

    static func json(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        line(String(decoding: data, as: UTF8.self))
    }

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

    /// Text that came from a provider or a file, with control characters escaped, so that it
    /// cannot move the cursor, change colours or rewrite the terminal.
    static func safe(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                escaped += scalar.escaped(asASCII: true)
            default:
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    static func mark(_ ok: Bool) -> String {
        guard useColor else { return ok ? "✓" : "✗" }
        return ok ? "\u{1B}[32m✓\u{1B}[0m" : "\u{1B}[31m✗\u{1B}[0m"
    }
}

/// Reads a secret from standard input (one line, without the newline).
func readSecretFromStandardInput(_ what: String) throws -> String {
    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
        throw CLIError.input("Expected the \(what) on standard input.")
    }
    return line
}
