import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyDevProvider

extension LatchkeyCommand {
    /// `latchkey dev-server`: the development OpenID provider, standalone.
    struct DevServer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dev-server",
            abstract: "Run the development OpenID provider on loopback until interrupted.",
            discussion: """
                Prints the issuer URL as the first line of standard output and `admin token: TOKEN` as the \
                second. Default users: alice / alice-password and bob / bob-password; clients latchkey-cli \
                (public) and latchkey-confidential (secret latchkey-confidential-secret): published \
                passwords, so it listens on loopback unless told otherwise. Fault injection and counters \
                are under /admin, for loopback callers presenting `Authorization: Bearer TOKEN`.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(help: "The port to listen on (0 picks a free one).")
        var port: Int = 0

        @Option(help: "A JSON file with users, clients and lifetimes.")
        var config: String?

        @Option(help: "The token the /admin endpoints require (random by default).")
        var adminToken: String?

        @Option(
            name: .customLong("resource"),
            help: ArgumentHelp(
                "A protected resource to serve at this path below the issuer, with its metadata (RFC 9728); PATH:SCOPE,SCOPE names the scopes it needs. Repeatable; `/resource` when none is given.",
                valueName: "path"))
        var resources: [String] = []

        @Option(help: "The address to listen on; anything but loopback needs --allow-non-loopback.")
        var host: String = "127.0.0.1"

        @Flag(
            help: "Listen on an address other than loopback, knowing that the default passwords are published.")
        var allowNonLoopback = false

        func validate() throws {
            try global.refuseStoreOptions("`dev-server` opens none: it runs a provider, whose state lives in memory.")
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
            if !["127.0.0.1", "::1", "localhost"].contains(host) && !allowNonLoopback {
                throw ValidationError(
                    "--host \(host) is not loopback: add --allow-non-loopback if you mean it (anyone who can reach it can sign in as the published users)."
                )
            }
            for resource in resources where !resource.hasPrefix("/") || resource.contains("..") {
                throw ValidationError(
                    "--resource \(resource) is not a path: it starts with / (e.g. /mcp or /files:files:read).")
            }
            if let adminToken, adminToken.count < 16 {
                throw ValidationError("--admin-token must be at least 16 characters.")
            }
        }

        func run() async throws {
            var configuration: DevProviderConfiguration
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
            if !resources.isEmpty {
                configuration.protectedResources = resources.map { text in
                    let parts = text.split(separator: ":", maxSplits: 1)
                    let scopes = parts.count > 1 ? parts[1].split(separator: ",").map(String.init) : []
                    for scope in scopes where !configuration.clients.isEmpty {
                        for index in configuration.clients.indices
                        where !configuration.clients[index].scopes.contains(scope) {
                            configuration.clients[index].scopes.append(scope)
                        }
                    }
                    return DevProviderConfiguration.ProtectedResource(path: String(parts[0]), scopes: scopes)
                }
            }
            if !["127.0.0.1", "::1", "localhost"].contains(host) {
                writeAll(
                    STDERR_FILENO,
                    "latchkey: warning: listening on \(host), not loopback. The development provider's default users and client secrets are published; anyone who can reach it can sign in as them.\n"
                )
            }
            let json = global.json
            try await DevProvider.serve(configuration: configuration, host: host, port: port, adminToken: adminToken) {
                provider in
                // Written straight to the file descriptor so a pipe sees the lines at once.
                let said =
                    json
                    ? Output.jsonText([
                        "issuer": JSONValue.string(provider.issuer.absoluteString),
                        "adminToken": .string(provider.adminToken),
                    ])
                    : provider.issuer.absoluteString + "\nadmin token: \(provider.adminToken)"
                writeAll(STDOUT_FILENO, said + "\n")
            }
        }
    }
}
