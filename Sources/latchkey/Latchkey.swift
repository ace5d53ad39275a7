import ArgumentParser

/// The `latchkey` command-line tool.
@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Keep OAuth 2.0 / OpenID Connect credentials and sign out correctly.",
        subcommands: [Demo.self, DevServer.self]
    )
}
