import LatchkeyRecords

/// What `latchkey` tells `latchkey-full` when it hands a command over: its version, so that two
/// halves of different builds never run as one tool (a full tool that reads the store another
/// way than the quick one, say). The full tool refuses another version with a message.
package enum HandoverCheck {
    /// The environment variable `latchkey` sets to its version before it runs `latchkey-full`.
    package static let variable = "LATCHKEY_HANDOVER_VERSION"

    /// Why the full tool must not run for a `latchkey` of version `quick`: `nil` when they match
    /// (or the full tool was started by itself, `quick` `nil`).
    package static func mismatch(quick: String?, full: String = LatchkeyVersion.current) -> String? {
        guard let quick, quick != full else { return nil }
        return """
            latchkey \(quick) handed this command to latchkey-full \(full), from another build; build and \
            install the two together, from one checkout: swift build -c release --product latchkey-full, then \
            swift build -c release --product latchkey, and copy both into one folder.
            """
    }
}
