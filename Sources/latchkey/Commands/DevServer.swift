import ArgumentParser
import Foundation
import LatchkeyDevProvider

extension LatchkeyCommand {
    /// `latchkey dev-server`: the development OpenID provider, standalone.
    struct DevServer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dev-server",
            abstract: "Run the development OpenID provider on loopback until interrupted.",
            discussion: """
                Prints the issuer URL as the first line of standard output. Default users: alice / \
                alice-password and bob / bob-password; clients latchkey-cli (public) and \
                latchkey-confidential (secret latchkey-confidential-secret). Fault injection and \
                counters are under /admin on loopback.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(help: "The port to listen on (0 picks a free one).")
        var port: Int = 0

        @Option(help: "A JSON file with users, clients and lifetimes.")
        var config: String?

        func validate() throws {
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
        }

        func run() async throws {
            let configuration: DevProviderConfiguration
            if let config {
                do {
                    configuration = try DevProviderConfiguration.load(from: URL(fileURLWithPath: config))
                } catch {
                    throw ValidationError(
                        "The configuration file \(config) cannot be read: \(error.localizedDescription)")
                }
            } else {
                configuration = .default
            }
            try await DevProvider.serve(configuration: configuration, port: port) { issuer in
                // Written straight to the file descriptor so a pipe sees the line at once.
                FileHandle.standardOutput.write(Data((issuer.absoluteString + "\n").utf8))
            }
        }
    }
}
