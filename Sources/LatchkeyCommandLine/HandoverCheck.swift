import LatchkeyBuildIdentity
import LatchkeyRecords

/// What `latchkey` tells `latchkey-full` when it hands a command over: its version and the build
/// identity of the `latchkey-full` it was built with, so that two halves of different builds
/// never run as one tool (a full tool that reads the store another way than the quick one,
/// say). The version alone would not do: two builds of one version, from different checkouts,
/// share it. The full tool refuses either mismatch with a message.
package enum HandoverCheck {
    /// The environment variable `latchkey` sets to its version before it runs `latchkey-full`.
    package static let variable = "LATCHKEY_HANDOVER_VERSION"
    /// The environment variable `latchkey` sets to the build identity of the `latchkey-full` it
    /// was built with (when its build could read one).
    package static let buildVariable = "LATCHKEY_HANDOVER_BUILD"

    /// Why the full tool must not run for a `latchkey` of version `quick`, built with a full
    /// tool of identity `quickBuild`, when it is itself version `full` and identity `fullBuild`:
    /// `nil` when they match. Either side unknown (the full tool started by itself, a
    /// cross-compiled `latchkey` that knows no identity, a program file that cannot be read) is
    /// no mismatch: the check compares what both sides know.
    package static func mismatch(
        quick: String?, quickBuild: String? = nil, full: String = LatchkeyVersion.current, fullBuild: String? = nil
    ) -> String? {
        let rebuild = """
            build and install the two together, from one checkout: swift build -c release --product latchkey-full, \
            then swift build -c release --product latchkey, and copy both into one folder.
            """
        guard let quick else { return nil }
        if quick != full {
            return
                "latchkey \(VisibleText.of(quick)) handed this command to latchkey-full \(full), from another build; \(rebuild)"
        }
        if let quickBuild, let fullBuild, quickBuild != fullBuild {
            return """
                latchkey was built with latchkey-full \(VisibleText.of(quickBuild)) but handed this command to \
                latchkey-full \(fullBuild), another build of \(full); \(rebuild)
                """
        }
        return nil
    }

    /// The build identity of the running program, read only when a handover asks for it.
    package static func runningBuild() -> String? { BuildIdentity.ofRunningProgram()?.description }
}
