// Run by the BuildFullToolFirst plugin once `latchkey-full` is built: writes the source of
// `latchkey` that names the executable it hands over to.
import Foundation

let source = """
    // Written by the BuildFullToolFirst plugin after SwiftPM built latchkey-full.

    /// The whole tool, which `latchkey` hands every command it does not answer to.
    enum FullTool {
        /// Its name, in the folder of `latchkey`.
        static let name = "latchkey-full"
    }

    """
guard CommandLine.arguments.count == 2,
    FileManager.default.createFile(atPath: CommandLine.arguments[1], contents: Data(source.utf8))
else {
    FileHandle.standardError.write(Data("latchkey-full-built: usage: latchkey-full-built OUTPUT\n".utf8))
    exit(1)
}
