import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// The `latchkey` command-line tool.
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Keep OAuth 2.0 / OpenID Connect credentials and sign out correctly.",
        discussion: """
            Exit codes: 0 success (signout: complete); 1 failed (signout: still signed in); 2 usage or \
            input error; 3 signout partial (signed out here, a server step failed or was queued); 4 the \
            account must sign in again; 5 api: the server could not be reached or did not answer. A \
            status other than 0 always comes with a line on standard error that says why.
            """,
        version: LatchkeyVersion.current,
        subcommands: [
            ProviderCommand.self, Login.self, Accounts.self, Status.self, Use.self, TokenCommand.self, Refresh.self,
            UserInfo.self, ApiCommand.self, ProofCommand.self, MCPProxyCommand.self, AgentCommand.self, Revoke.self,
            Remove.self,
            SignOut.self, Outbox.self,
            CredentialCommand.self, KeyCommand.self,
            DevServer.self,
            Demo.self,
        ]
    )
}

/// `latchkey [--home DIR] [--store URL] [--key-file FILE | --key-fd N] [--json] COMMAND`: the shared options may come before the command;
/// every command declares them, so they are moved behind it for the parser.
func globalOptionsLast(_ arguments: [String]) -> [String] {
    var leading: [String] = []
    var rest = arguments[...]
    let valued = ["--home", "--key-file", "--key-fd", "--store"]
    while let first = rest.first, first.hasPrefix("--") {
        if first == "--json" || valued.contains(where: { first.hasPrefix($0 + "=") }) {
            leading.append(first)
            rest = rest.dropFirst()
        } else if valued.contains(first), rest.count >= 2 {
            leading += rest.prefix(2)
            rest = rest.dropFirst(2)
        } else {
            break
        }
    }
    return Array(rest) + leading
}

/// Runs the tool, mapping errors to the documented exit codes.
@main
enum Main {
    static func main() async {
        ProcessHardening.disableCoreDumps()
        // Started by `latchkey`: only by one of this very build.
        let environment = ProcessInfo.processInfo.environment
        let (handedOver, handedOverBuild) = (
            environment[HandoverCheck.variable], environment[HandoverCheck.buildVariable]
        )
        unsetenv(HandoverCheck.variable)
        unsetenv(HandoverCheck.buildVariable)
        if let mismatch = HandoverCheck.mismatch(
            quick: handedOver, quickBuild: handedOverBuild,
            fullBuild: handedOverBuild == nil ? nil : HandoverCheck.runningBuild())
        {
            Output.error(mismatch)
            exit(ExitStatus.failed.rawValue)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        // A shell asking for completions: the account and provider names are read
        // asynchronously, which only the parser's async entry point runs.
        if arguments.first == "---completion" {
            await LatchkeyCommand.main(arguments)
            return
        }
        do {
            var command = try LatchkeyCommand.parseAsRoot(globalOptionsLast(arguments))
            // The development server shuts down gracefully on its own signals.
            if !(command is LatchkeyCommand.DevServer) { SignalDeferral.install() }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            // A signal that waited for a refresh ends the process now, whatever the command did.
            SignalDeferral.endIfSignalled()
        } catch let error as CLIError {
            Output.error(error.description)
            SignalDeferral.endIfSignalled()
            exit(error.status.rawValue)
        } catch let error as ExitCode {
            SignalDeferral.endIfSignalled()
            exit(error.rawValue)
        } catch {
            let code = LatchkeyCommand.exitCode(for: error)
            if code == .validationFailure {
                // Usage errors are exit status 2, as the tool's contract says.
                writeAll(STDERR_FILENO, LatchkeyCommand.fullMessage(for: error) + "\n")
                exit(ExitStatus.usage.rawValue)
            }
            SignalDeferral.endIfSignalled()
            LatchkeyCommand.exit(withError: error)
        }
    }
}
