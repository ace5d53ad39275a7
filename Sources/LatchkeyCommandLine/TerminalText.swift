/// The text the tool writes, the same from every command: escaped for a terminal, or JSON.
package enum TerminalText {
    /// `value` as one line of JSON (keys sorted, dates in ISO 8601).
    package static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Text that came from a provider or a file, with control characters and invisible format
    /// characters escaped, so that it cannot move the cursor, change colours, rewrite the
    /// terminal, reorder what it shows, or add a line of its own (a username carrying a newline
    /// would add an account to a listing). Tabs stay; newlines too when `keepingLines` (a journey's
    /// free text shown to the user, never parsed).
    package static func safe(_ text: String, keepingLines: Bool = false) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            if scalar == "\t" || (keepingLines && scalar == "\n") {
                escaped.unicodeScalars.append(scalar)
                continue
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                escaped += scalar.escaped(asASCII: true)
            default:
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
