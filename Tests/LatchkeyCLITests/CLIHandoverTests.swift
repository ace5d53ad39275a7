import Foundation
import LatchkeyBuildIdentity
import LatchkeyCommandLine
import LatchkeyTestSupport
import Testing

/// The two halves of the tool stay one tool: the quick path parses what the full tool's parser
/// parses, and the full tool runs only for a `latchkey` of its own version and build.
@Suite("latchkey and latchkey-full agree")
struct CLIHandoverTests {
    /// One argument of a command, as swift-argument-parser describes it.
    struct Argument: Decodable {
        struct Name: Decodable { var kind: String, name: String }
        var kind: String
        var names: [Name]?
    }

    struct Command: Decodable {
        var commandName: String
        var arguments: [Argument]?
        var subcommands: [Command]?

        func command(_ words: ArraySlice<String>) -> Command? {
            guard let first = words.first else { return self }
            return subcommands?.first { $0.commandName == first }?.command(words.dropFirst())
        }
    }

    struct ToolInfo: Decodable { var command: Command }

    @Test(
        "every option and flag the quick path parses is one of the full tool's, for the same command, taking a value alike"
    )
    func grammar() async throws {
        let dump = try await ChildProcess.run(
            Executables.url("latchkey-full"), ["--experimental-dump-help"], input: "")
        try #require(dump.status == 0, "\(dump.stderr)")
        let tool = try JSONDecoder().decode(ToolInfo.self, from: Data(dump.stdout.utf8))
        for quick in QuickGrammar.commands {
            let full = try #require(tool.command.command(quick.words[...]), "the full tool has no \(quick.words)")
            let arguments = full.arguments ?? []
            func names(_ kind: String) -> Set<String> {
                let named: [Argument.Name] = arguments.filter { $0.kind == kind }.flatMap { $0.names ?? [] }
                return Set(named.filter { $0.kind == "long" }.map { "--" + $0.name })
            }
            let options = names("option")
            let flags = names("flag")
            for option in quick.options.union(QuickGrammar.sharedOptions) {
                #expect(options.contains(option), "\(quick.words): \(option) takes no value in the full tool")
            }
            for flag in quick.flags.union(QuickGrammar.sharedFlags) {
                #expect(flags.contains(flag), "\(quick.words): \(flag) is not a flag of the full tool")
            }
            let positionals = arguments.filter { $0.kind == "positional" }.count
            #expect(quick.positionals <= positionals, "\(quick.words): more positional arguments than the full tool's")
        }
    }

    @Test("latchkey-full refuses to run for a latchkey of another version, and says what to rebuild")
    func versionMismatch() async throws {
        let home = try TemporaryFolder()
        defer { home.cleanUp() }
        let refused = try await ChildProcess.run(
            Executables.url("latchkey-full"), ["--home", home.path, "accounts"],
            environment: [HandoverCheck.variable: "0.0.0-elsewhere"], input: "")
        #expect(refused.status == ExitStatus.failed.rawValue)
        #expect(refused.stderr.contains("0.0.0-elsewhere"))
        #expect(refused.stderr.contains("--product latchkey-full"))
        // Handed over by latchkey itself, the same command runs.
        let handedOver = try await ChildProcess.run(Executables.latchkey, ["--home", home.path, "accounts"], input: "")
        #expect(handedOver.status == 0, "\(handedOver.stderr)")
    }

    @Test(
        "latchkey refuses to hand over to a latchkey-full of another build of the same version, naming both builds"
    )
    func buildMismatch() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let home = folder.file("home")
        let quick = URL(fileURLWithPath: folder.file("latchkey"))
        let full = URL(fileURLWithPath: folder.file("latchkey-full"))
        try FileManager.default.copyItem(at: Executables.latchkey, to: quick)
        var program = try [UInt8](Data(contentsOf: Executables.url("latchkey-full")))
        let built = try #require(BuildIdentity.of(programAt: Executables.url("latchkey-full").path))
        // The two copied as built hand over.
        try Data(program).write(to: full)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: full.path)
        let matching = try await ChildProcess.run(quick, ["--home", home, "accounts"], input: "")
        #expect(matching.status == 0, "\(matching.stderr)")
        // Another build of the same version: the same program with another build ID.
        let at = try #require(
            (0...(program.count - built.bytes.count)).first {
                program[$0..<$0 + built.bytes.count].elementsEqual(built.bytes)
            })
        program[at] ^= 0xFF
        try Data(program).write(to: full)
        let other = try #require(BuildIdentity.of(programAt: full.path))
        #expect(other != built)
        let refused = try await ChildProcess.run(quick, ["--home", home, "accounts"], input: "")
        #expect(refused.status == ExitStatus.failed.rawValue)
        #expect(refused.stderr.contains("\(built)") && refused.stderr.contains("\(other)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--product latchkey-full"))
        // The full tool started by itself runs.
        let direct = try await ChildProcess.run(full, ["--home", home, "accounts"], input: "")
        #expect(direct.status == 0, "\(direct.stderr)")
    }
}
