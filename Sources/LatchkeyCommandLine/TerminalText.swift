import LatchkeyRecords

/// The text the tool writes, the same from every command: escaped for a terminal, or JSON.
package enum TerminalText {
    /// `value` as one line of JSON (keys sorted, dates in ISO 8601), safe for a terminal and
    /// valid JSON whatever text it carries: every character ``safe(_:keepingLines:)`` would
    /// escape (DEL, U+0085, U+2028, U+200B, U+FEFF, …) is written as a JSON `\uXXXX` escape,
    /// which a JSON reader reads back as the character itself.
    package static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        // The encoder writes these characters as they are, and only inside strings (what it
        // writes outside them is ASCII punctuation, digits and letters): escaping them there
        // keeps every string's value.
        var escaped = ""
        for scalar in String(decoding: data, as: UTF8.self).unicodeScalars {
            guard VisibleText.isUnsafe(scalar) else {
                escaped.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return escaped
    }

    /// Text that came from a provider or a file, with control characters and invisible format
    /// characters escaped, so that it cannot move the cursor, change colours, rewrite the
    /// terminal, reorder what it shows, add a line of its own (a username carrying a newline
    /// would add an account to a listing) or a column (a tab). Tabs and newlines stay when
    /// `keepingLines` (a journey's free text shown to the user, never parsed).
    package static func safe(_ text: String, keepingLines: Bool = false) -> String {
        VisibleText.of(text, keepingLines: keepingLines)
    }

    /// Fields of one row of a listing, each made ``safe(_:keepingLines:)``, separated by tabs:
    /// the only tabs in the row are the tool's own.
    package static func row(_ fields: [String]) -> String {
        fields.map { safe($0) }.joined(separator: "\t")
    }
}
