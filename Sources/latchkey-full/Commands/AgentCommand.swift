import ArgumentParser
import Foundation
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine
import Logging
import NIOPosix

/// `latchkey agent`: holds the opened store and hands out access tokens and DPoP proofs through
/// a unix socket (mode 0600), as ssh-agent hands out signatures: the commands that only read a
/// token use it when `LATCHKEY_AGENT_SOCK` is set and their machine has no store — a remote
/// host reached with `ssh -R` needs the binary and the socket, nothing else.
struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent", abstract: "Hand out access tokens through a socket, here or over ssh -R.",
        discussion: """
            `eval "$(latchkey agent)"` starts the agent in the background and sets \
            LATCHKEY_AGENT_SOCK. `latchkey agent --forward --account A --resource R --confirm` makes a \
            restricted socket for one `ssh -R REMOTE.sock:SOCKET host`: it hands out tokens of that \
            account for that resource only, each use confirmed on this terminal. No socket ever hands out \
            a refresh token, a key, or (unless --allow-id-token) an ID token. Every use is logged in the \
            home's agent.log (account, resource, the peer's user id; never a token).
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The socket's path. Default: $XDG_RUNTIME_DIR/latchkey/agent.sock.") var socket: String?
    @Flag(help: "Serve in the foreground (for a service manager) instead of in the background.") var foreground =
        false
    @Flag(help: "Stop the agent at --socket, else at $LATCHKEY_AGENT_SOCK.") var stop = false
    @Flag(help: "Make a restricted socket for one `ssh -R`, served in the foreground until interrupted.") var forward =
        false
    @Option(name: .customLong("account"), help: "--forward: an account it hands tokens of (repeatable).")
    var accounts: [String] = []
    @Option(name: .customLong("resource"), help: "--forward: a resource it hands tokens for (repeatable).")
    var resources: [String] = []
    @Option(help: "--forward: the scopes a token may carry at most (space separated).") var scope: String?
    @Option(help: "--forward: the longest a token it hands out may still live.")
    var maxLifetime: TokenValidity?
    @Flag(help: "--forward: confirm each use on this terminal (as ssh-add -c).") var confirm = false
    @Flag(help: "--forward: hand out ID tokens too.") var allowIDToken = false
    @Flag(help: .hidden) var detached = false

    func validate() throws {
        let limited = !accounts.isEmpty || !resources.isEmpty || scope != nil || maxLifetime != nil || confirm
        if limited || allowIDToken, !forward {
            throw ValidationError(
                "--account, --resource, --scope, --max-lifetime, --confirm and --allow-id-token go with --forward.")
        }
        if stop, forward || foreground { throw ValidationError("--stop stops an agent; it starts none.") }
        if global.keyDescriptor != nil || global.passphraseDescriptor != nil, !foreground, !forward, !stop {
            throw ValidationError(
                "--key-fd and --passphrase-fd reach an agent in the foreground only: add --foreground.")
        }
        for resource in resources where !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
    }

    func run() async throws {
        if stop { return try await stopAgent() }
        if forward { return try await serve(at: try socket ?? AgentSocket.folder() + "/forward-\(getpid()).sock") }
        let path = try AgentSocket.ownerPath(socket)
        if foreground || detached { return try await serve(at: path) }
        try await startInBackground(at: path)
    }

    /// The limits of the socket this command serves.
    var policy: AgentPolicy {
        guard forward else { return .owner }
        return AgentPolicy(
            accounts: accounts.isEmpty ? nil : accounts, resources: resources.isEmpty ? nil : resources,
            scopes: scope.map { $0.split(separator: " ").map(String.init) }, maximumLifetime: maxLifetime?.seconds,
            confirmsEachUse: confirm, allowsIDTokens: allowIDToken)
    }

    private func serve(at path: String) async throws {
        if detached { setsid() }
        let session = try await global.location.openStore()
        let log = AgentLog(file: global.location.folder.appendingPathComponent("agent.log").path, echo: !detached)
        let server: AgentServer
        do {
            server = try await AgentServer.listen(
                at: path, policy: policy, backend: StoreAgentBackend(session: session),
                limits: forward ? .forwarded : AgentServer.Limits(),
                logger: Home.logger ?? Logger(label: "latchkey", factory: { _ in SwiftLogNoOpLogHandler() }),
                confirm: { use in await TerminalConfirmation.shared.ask(use) }, record: { log.write($0, socket: path) })
        } catch {
            throw CLIError.failed("The agent cannot listen at \(path): \(error)")
        }
        if forward {
            Output.error("Forwarding socket: \(path)")
            // Into a folder only the remote user can write: a fixed name in a shared /tmp could be
            // taken first by another user there (every client refuses such a socket).
            Output.error(
                "Forward it into HOST's runtime folder: ssh -R '/run/user/REMOTE_UID/latchkey.sock:\(path)' HOST")
            Output.error(
                "(REMOTE_UID: `id -u` on HOST. Where HOST has no /run/user, make a private folder first: ssh HOST 'mkdir -m 700 -p ~/.latchkey-agent', and forward to that folder's full path.)"
            )
            Output.error("and on HOST: LATCHKEY_AGENT_SOCK=\"$XDG_RUNTIME_DIR/latchkey.sock\" latchkey token")
        } else {
            Output.line("\(AgentSocket.variable)=\(TokenDescription.quoted(path)); export \(AgentSocket.variable);")
            Output.line("echo Agent pid \(getpid());")
        }
        if detached { Self.detachOutput() }
        SignalDeferral.beforeEnding { unlink(path) }
        // The agent ends with its session: when its socket goes (the runtime directory is
        // removed at logout), it goes too.
        let watch = Task {
            while !Task.isCancelled, FileManager.default.fileExists(atPath: path) {
                try? await Task.sleep(for: .seconds(5))
            }
            await server.close()
        }
        defer { watch.cancel() }
        try await server.run()
        unlink(path)
    }

    /// Starts `latchkey agent --detached` and prints what it printed once it listens.
    private func startInBackground(at path: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = ["agent", "--detached", "--socket", path] + Self.storeArguments(global)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw CLIError.failed("The agent could not be started: \(error)")
        }
        // Its first lines, then end of file: it closed its standard output once it listens.
        let printed =
            (try? await NIOThreadPool.singleton.runIfActive { try output.fileHandleForReading.readToEnd() }) ?? nil
            ?? Data()
        guard !printed.isEmpty else {
            throw CLIError.failed("The agent did not start; run `latchkey agent --foreground` to see why.")
        }
        FileHandle.standardOutput.write(printed)
    }

    private func stopAgent() async throws {
        guard let path = socket ?? ProcessInfo.processInfo.environment[AgentSocket.variable] else {
            throw CLIError.input("No agent named: give --socket, or set \(AgentSocket.variable).")
        }
        let answer = try await RemoteAgent.ask(AgentRequest(.stop), at: path)
        Output.report(global, answer.message ?? "The agent stops.")
    }

    /// The options that say which store the detached agent opens.
    static func storeArguments(_ global: GlobalOptions) -> [String] {
        var arguments: [String] = []
        if let home = global.home { arguments += ["--home", home] }
        if let store = global.store { arguments += ["--store", store] }
        if let keyFile = global.keyFile { arguments += ["--key-file", keyFile] }
        return arguments
    }

    /// Points standard output and error at /dev/null: the process that started this one read
    /// them to their end.
    static func detachOutput() {
        let null = open("/dev/null", O_WRONLY)
        guard null >= 0 else { return }
        dup2(null, STDOUT_FILENO)
        dup2(null, STDERR_FILENO)
        close(null)
    }
}
