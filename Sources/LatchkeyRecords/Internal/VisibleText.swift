/// Text from outside (a remote's request, a server's message) as it may be shown on a terminal
/// or written to a log line: every character a terminal acts on or hides — control characters
/// (C0, DEL, C1: ESC sequences, a bell, a carriage return, a newline), format characters
/// (bidirectional overrides, zero-width ones) and the line and paragraph separators — written
/// as a visible `\u{…}` escape. A line built from it stays one line, and cannot retitle a
/// window, write the clipboard (OSC 52) or redraw a question.
package enum VisibleText {
    /// `text` with every such character escaped.
    package static func of(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                shown += scalar.escaped(asASCII: true)
            default:
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}
