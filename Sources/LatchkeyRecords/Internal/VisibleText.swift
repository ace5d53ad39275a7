/// Text from outside (a remote's request, a server's message) as it may be shown on a terminal
/// or written to a log line: every character a terminal acts on or hides — control characters
/// (C0, DEL, C1: ESC sequences, a bell, a carriage return, a newline), format characters
/// (bidirectional overrides, zero-width ones) and the line and paragraph separators — written
/// as a visible `\u{…}` escape. A line built from it stays one line, and cannot retitle a
/// window, write the clipboard (OSC 52) or redraw a question.
package enum VisibleText {
    /// `text` with every such character escaped; tabs and newlines kept when `keepingLines`
    /// (free text shown to a person, never parsed).
    package static func of(_ text: String, keepingLines: Bool = false) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if keepingLines && (scalar == "\t" || scalar == "\n") || !isUnsafe(scalar) {
                shown.unicodeScalars.append(scalar)
            } else {
                shown += scalar.escaped(asASCII: true)
            }
        }
        return shown
    }

    /// Whether a terminal would act on `scalar` or hide it: control characters (C0, DEL, C1),
    /// format characters (bidirectional overrides, zero-width characters, the byte order mark)
    /// and the line and paragraph separators.
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}
