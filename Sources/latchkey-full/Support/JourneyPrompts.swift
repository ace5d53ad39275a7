import Foundation
import Latchkey
import LatchkeyCommandLine

/// Answers a journey's pages for `latchkey login`: the name and password from the command line
/// when given; on a terminal, a prompt for each callback (the password hidden, a choice as a
/// numbered list with its default); elsewhere a callback's default. A callback nobody can
/// answer stops the sign-in with exit status 2, naming it. Text goes to standard error:
/// standard output is for the result.
struct JourneyPrompts {
    let username: String?
    let password: String?
    /// Whether a person can be asked (standard input is a terminal).
    let interactive: Bool

    /// Answers every callback of `page` in place; returns how long a polling wait asks to wait
    /// before the page goes back.
    func answer(_ page: inout JourneyPage) throws -> Duration? {
        var wait: Duration?
        if interactive, let header = page.header, !header.isEmpty { say(header) }
        for index in page.callbacks.indices {
            var callback = page.callbacks[index]
            switch callback.kind {
            case .textOutput(let message, let type):
                // Type 4 is a script for a browser; there is none here.
                if type != 4 { say(message) }
            case .pollingWait(let duration, let message):
                say(message)
                wait = duration
            case .metadata:
                break
            case .name(let prompt):
                callback.setText(try username ?? ask(prompt.isEmpty ? "User name" : prompt, callback))
            case .password(let prompt):
                callback.setText(try password ?? askHidden(prompt.isEmpty ? "Password" : prompt, callback))
            case .textInput(let prompt, let defaultText):
                callback.setText(try ask(prompt, callback, default: defaultText))
            case .choice(let prompt, let options, let defaultIndex),
                .confirmation(let prompt, let options, let defaultIndex):
                callback.select(try choose(prompt, options, default: defaultIndex, callback))
            case .booleanAttribute(_, let prompt, _, let value):
                callback.setBool(try confirm(prompt, default: value, callback))
            case .termsAndConditions(_, let terms, _):
                guard interactive else { throw unanswered(callback) }
                say(terms)
                guard try confirm("Accept these terms?", default: nil, callback) else {
                    throw CLIError.failed("The terms were not accepted; nothing was signed in.")
                }
                callback.setBool(true)
            case .hiddenValue, .other:
                if let answer = callback.defaultAnswer {
                    callback.setValue(answer)
                } else if !callback.inputs.isEmpty {
                    callback.setText(try ask(callback.prompt ?? callback.type, callback))
                }
            }
            page.callbacks[index] = callback
        }
        return wait
    }

    private func say(_ text: String) {
        writeAll(STDERR_FILENO, Output.safe(text, keepingLines: true) + "\n")
    }

    private func unanswered(_ callback: JourneyCallback) -> CLIError {
        CLIError.input(
            "The journey asks for \(callback.type)\(callback.prompt.map { " (\($0))" } ?? ""), and nobody can answer it here: \(interactive ? "no answer was given" : "standard input is not a terminal"). Give --username and --password-stdin, or sign in on a terminal."
        )
    }

    private func ask(_ prompt: String, _ callback: JourneyCallback, default value: String? = nil) throws -> String {
        guard interactive else {
            guard let value, !value.isEmpty else { throw unanswered(callback) }
            return value
        }
        let shown = value.map { "\(prompt) [\($0)]" } ?? prompt
        writeAll(STDERR_FILENO, "\(Output.safe(shown)): ")
        let line = readLine(strippingNewline: true) ?? ""
        if line.isEmpty, let value { return value }
        guard !line.isEmpty else { throw unanswered(callback) }
        return line
    }

    private func askHidden(_ prompt: String, _ callback: JourneyCallback) throws -> String {
        guard interactive else { throw unanswered(callback) }
        do {
            return try readSecretFromStandardInput(prompt)
        } catch {
            throw unanswered(callback)
        }
    }

    private func choose(_ prompt: String, _ options: [String], default index: Int?, _ callback: JourneyCallback)
        throws -> Int
    {
        guard interactive else {
            guard let index else { throw unanswered(callback) }
            return index
        }
        say(prompt)
        for (number, option) in options.enumerated() {
            say("  \(number + 1). \(option)\(number == index ? " (default)" : "")")
        }
        while true {
            let answer = try ask("Choose 1-\(options.count)", callback, default: index.map { String($0 + 1) })
            if let number = Int(answer), options.indices.contains(number - 1) { return number - 1 }
            say("Type a number from 1 to \(options.count).")
        }
    }

    private func confirm(_ prompt: String, default value: Bool?, _ callback: JourneyCallback) throws -> Bool {
        guard interactive else {
            guard let value else { throw unanswered(callback) }
            return value
        }
        while true {
            let answer = try ask("\(prompt) (y/n)", callback, default: value.map { $0 ? "y" : "n" }).lowercased()
            if ["y", "yes"].contains(answer) { return true }
            if ["n", "no"].contains(answer) { return false }
        }
    }

    /// Whether standard input is a terminal a person can answer on.
    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
}
