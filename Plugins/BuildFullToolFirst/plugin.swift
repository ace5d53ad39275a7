import PackagePlugin

/// Makes SwiftPM build `latchkey-full` whenever it builds `latchkey`, so that
/// `swift run latchkey demo` works from a fresh clone: `latchkey` hands every command it does not
/// answer itself to `latchkey-full` beside it, but must not link it (that would load the whole
/// tool into every quick answer).
///
/// It runs one build command whose input is the `latchkey-full` executable: the build system
/// builds that first, like any input another command produces, in the same configuration and
/// build folder (the destination build, not a second copy for the host). Its output is a
/// source of `latchkey` naming the executable it hands over to and the build identity (the
/// linker's build ID) that executable carries, which it checks at every handover. The tool is a few lines of its
/// own (`latchkey-full-built`), so the only thing built for the host is that.
///
/// When not cross-compiling, plugin tools live in the folder the products do, which is how
/// `latchkey-full`'s path is found; when cross-compiling that path names nothing, nothing
/// waits for it, and `latchkey-full` is built by naming it (`--product latchkey-full`), as an
/// installation does anyway.
@main
struct BuildFullToolFirst: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let writer = try context.tool(named: "latchkey-full-built")
        let fullTool = writer.url.deletingLastPathComponent().appending(path: "latchkey-full")
        let output = context.pluginWorkDirectoryURL.appending(path: "FullTool.swift")
        return [
            .buildCommand(
                displayName: "Building latchkey-full before latchkey", executable: writer.url,
                arguments: [output.path, fullTool.path], inputFiles: [fullTool], outputFiles: [output])
        ]
    }
}
