// Run by the BuildFullToolFirst plugin once `latchkey-full` is built: writes the source of
// `latchkey` that names the executable it hands over to, and the build identity that
// executable carries (its linker's build ID), which the full tool checks at every handover.
import Foundation
import LatchkeyBuildIdentity

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("latchkey-full-built: usage: latchkey-full-built OUTPUT LATCHKEY-FULL\n".utf8))
    exit(1)
}
// Cross-compiling, the full tool is not where the plugin looks (it is built by naming it): the
// handover then checks the version alone.
let identity = BuildIdentity.of(programAt: arguments[2]).map { "\"\($0)\"" } ?? "nil"
let source = """
    // Written by the BuildFullToolFirst plugin after SwiftPM built latchkey-full.

    /// The whole tool, which `latchkey` hands every command it does not answer to.
    enum FullTool {
        /// Its name, in the folder of `latchkey`.
        static let name = "latchkey-full"
        /// The build identity of the `latchkey-full` this `latchkey` was built with.
        static let buildIdentity: String? = \(identity)
    }

    """
guard FileManager.default.createFile(atPath: arguments[1], contents: Data(source.utf8)) else {
    FileHandle.standardError.write(Data("latchkey-full-built: cannot write \(arguments[1])\n".utf8))
    exit(1)
}
