import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP
import LatchkeyMCP
import Logging

/// `latchkey mcp-proxy URL`: an MCP stdio server for a remote MCP server, with the account's
/// token on every request.
struct MCPProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp-proxy",
        abstract: "Serve a remote MCP server over standard input and output, with the account's token.",
        discussion: """
            For an MCP host (an AI agent, an editor): give it `latchkey mcp-proxy URL` as the command of \
            a stdio server. Each message it writes is sent to URL over Streamable HTTP with the \
            account's token for the server (RFC 8707), each message the server sends back is written \
            out as it arrives. Every proxy process shares the account's one refresh: a rotating \
            refresh token is never replayed. A request that fails is answered with a JSON-RPC error \
            that says why (and on standard error): sign in with `latchkey login --resource URL` first. \
            Where the host shows URLs (MCP URL-mode elicitation), an account that must sign in again \
            does so without leaving it: the host opens a device code's page, and the request waits.

            Exit status: 0 the client closed standard input; 1 the proxy could not start (no \
            account, standard input not a pipe); 2 a usage error.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The MCP server's URL (https; plain http to this machine only).") var url: String
    @Option(
        help: "An account id, username or email; the default account if left out.", completion: Completions.accounts)
    var account: String?
    @Option(help: "The resource whose token is sent (RFC 8707); the URL itself by default.") var resource: String?
    @Option(help: "Narrow the token to these scopes (space separated).") var scope: String?
    @Option(help: "Seconds one request may take, its answer's stream included.") var timeout: Int = 600

    func validate() throws {
        guard let target = URL(string: url), target.host != nil, ["http", "https"].contains(target.scheme) else {
            throw ValidationError("The URL must be an http or https URL: \(url)")
        }
        guard EndpointSecurity.isAcceptable(target) else {
            throw ValidationError("The token would travel in the clear: use https (plain http to this machine only).")
        }
        if let resource, !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second.") }
    }

    func run() async throws {
        guard let endpoint = URL(string: url) else { throw CLIError.input("Not a URL: \(url)") }
        let resource = URL(string: self.resource ?? url) ?? endpoint
        // The store's account, or an agent's: the proxy is the same over either.
        let source = global.accountSource(account)
        if account == nil, try await !source.hasProviders() {
            try await ApiCommand.sayWhereToSignIn(for: endpoint)
        }
        // The MCP authorization specification: a token goes only to a server whose own
        // authorization server issued it.
        try await ResourceGate.require(resource, source: source, asked: resource.absoluteString)
        let sender = try await source.requestSender()
        // A step-up sign-in keeps what the grant allows (read now; unknown through an agent).
        let granted = try await source.grantedScopes() ?? ["openid", "offline_access"]
        // Who the account is, for the sign-in it may need (read now: a signed-out account is gone).
        let again = try await source.reSignIn()
        let hint = again?.loginHint
        let configuration = MCPProxy.Configuration(
            endpoint: endpoint, resource: resource, scopes: scope.map { $0.split(separator: " ").map(String.init) },
            requestTimeout: .seconds(timeout),
            explain: { Self.explain($0, resource: resource, granted: granted, loginHint: hint) },
            remedy: { Self.remedy($0, resource: resource, granted: granted, loginHint: hint) },
            report: { Output.error(Self.explain($0, resource: resource, granted: granted, loginHint: hint)) },
            signIn: again.map { Self.signIn($0, resource: resource, global: global) })
        // Connections are kept idle for less than the 5 s after which uvicorn (the Python SDK's
        // server) and Node.js close theirs: a message sent on one the server is closing would
        // fail. The transport is shut down however serving ends.
        let transport = AsyncHTTPClientTransport(idleTimeout: .seconds(4))
        let served: Result<Void, any Error>
        do {
            try await MCPStandardIO.serve { deliver in
                MCPProxy(
                    configuration: configuration, sender: sender, transport: transport,
                    logger: Home.logger ?? Logger(label: "latchkey", factory: { _ in SwiftLogNoOpLogHandler() }),
                    deliver: deliver)
            }
            served = .success(())
        } catch {
            served = .failure(error)
        }
        try? await transport.shutdown()
        if case .failure(let failure as MCPStandardIO.Failure) = served { throw CLIError.failed(failure.description) }
        try served.get()
    }

    /// What a failure tells the user, in the JSON-RPC error and on standard error: what happened
    /// and the command that mends it (``remedy(_:resource:granted:)``), each word quoted for a shell.
    static func explain(_ failure: MCPProxyFailure, resource: URL, granted: [String], loginHint: String?) -> String {
        let command = remedy(failure, resource: resource, granted: granted, loginHint: loginHint).map(
            ShellCommand.init)
        switch failure.code {
        case .insufficientScope:
            return "\(failure) Sign in for it: `\(command.map(String.init(describing:)) ?? "")`."
        case .tokenRefused, .signedOut:
            return "\(failure) Sign in again: `\(command.map(String.init(describing:)) ?? "")`."
        case .credential where failure.providerError?.requiresSignIn == true:
            return
                "No token for \(TerminalText.safe(failure.endpoint.absoluteString)): the account must sign in again. Run `\(command.map(String.init(describing:)) ?? "")`."
        default:
            return failure.description
        }
    }

    /// The argument vector of the sign-in that mends `failure`, when one does: a server's
    /// `scope` is one argument, never code.
    /// A missing scope is signed in for with those `granted` (the step-up union); the account's
    /// `loginHint` goes with it.
    static func remedy(_ failure: MCPProxyFailure, resource: URL, granted: [String], loginHint: String?) -> [String]? {
        let login = ResourceGate.signIn(for: resource.absoluteString, loginHint: loginHint)
        switch failure.code {
        case .insufficientScope:
            return login
                + (failure.scope.map {
                    let asked = $0.split(separator: " ").map(String.init)
                    return [
                        "--scope", ResourceSignInPlan.stepUp(granted: granted, asked: asked).joined(separator: " "),
                    ]
                } ?? [])
        case .tokenRefused, .signedOut:
            return login
        case .credential where failure.providerError?.requiresSignIn == true:
            return login
        default:
            return nil
        }
    }
}
