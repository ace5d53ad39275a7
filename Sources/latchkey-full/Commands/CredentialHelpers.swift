import ArgumentParser
import Foundation
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// `latchkey credential …`: tokens handed to the tools people already run.
struct CredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential", abstract: "Hand fresh tokens to other tools (git, kubectl).",
        subcommands: [Git.self, Kubectl.self])

    /// `latchkey credential kubectl`: a client-go exec credential plugin.
    struct Kubectl: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A kubectl exec credential plugin: prints an ExecCredential with a fresh ID (or access) token.",
            discussion: """
                In a kubeconfig user: `exec: {apiVersion: client.authentication.k8s.io/v1, command: latchkey, \
                args: [credential, kubectl], interactiveMode: Never}`. The ID token is the default, as \
                Kubernetes' OIDC authentication expects; an expired one is replaced through a refresh (one for \
                every kubectl asking at once). It never prompts: an account that must sign in again gets a \
                message saying so on standard error, and kubectl shows it.
                """)

        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case id, access
        }

        @OptionGroup var global: GlobalOptions
        @Option(
            help: "An account id, username or email; the default account if left out.", completion: Completions.accounts
        )
        var account: String?
        @Option(help: "Which token kubectl sends: id (the default) or access.") var token: Kind = .id

        func run() async throws {
            // What kubectl says of itself (client.authentication.k8s.io): its API version, and
            // whether a person is there to answer (this plugin never asks either way).
            let apiVersion = ExecCredential.apiVersion(
                execInfo: ProcessInfo.processInfo.environment["KUBERNETES_EXEC_INFO"])
            if let agent = AgentSocket.remote(for: global.location.location) {
                let answer = try await RemoteAgent.ask(
                    AgentRequest(token == .id ? .idToken : .token, account: account), at: agent)
                guard let value = answer.token else { throw CLIError.failed("The agent gave no token for kubectl.") }
                writeAll(
                    STDOUT_FILENO,
                    try ExecCredential(apiVersion: apiVersion, token: value, expiry: answer.expiresAt).json)
                return
            }
            let context: AccountContext
            do {
                context = try await global.account(account) { _ in false }
            } catch let error as CLIError {
                throw CLIError(
                    status: error.status,
                    description:
                        "kubectl asked for a token, but there is no account to give one for: \(error.description) Sign in with `latchkey login`."
                )
            }
            if token == .access, context.stored.token.dpop != nil {
                throw CLIError.input(
                    "kubectl cannot send the proof a DPoP-bound access token needs (the account's provider was added with --dpop): use the ID token (--token id), which is not bound, or a provider without --dpop."
                )
            }
            let value: String
            let expiry: Date?
            do {
                switch token {
                case .id:
                    value = try await context.credential.idToken()
                    expiry = try await context.credential.token.idTokenExpiresAt
                case .access:
                    value = try await context.credential.accessToken()
                    expiry = try await context.credential.token.expiresAt
                }
            } catch {
                throw CLIError.provider(error, doing: "No \(token.rawValue) token for kubectl")
            }
            writeAll(STDOUT_FILENO, try ExecCredential(apiVersion: apiVersion, token: value, expiry: expiry).json)
        }
    }

    /// `latchkey credential git get|store|erase`: git's credential-helper protocol.
    struct Git: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "git's credential helper: the access token of the host's account as the password.",
            discussion: """
                Configure it with `git config --global credential.https://git.example.com.helper \
                '!latchkey credential git'` and map the host with `latchkey provider add … --git-host \
                git.example.com`. `get` answers with the account's username and a fresh access token \
                (refreshed once for every process asking at once) and its expiry; `erase` marks the \
                token rejected, so the next `get` refreshes; `store` does nothing (Latchkey keeps the \
                token). A host no provider names gets no answer, and git asks its other helpers.
                """)

        enum Operation: String, ExpressibleByArgument, CaseIterable {
            case get, store, erase
        }

        @OptionGroup var global: GlobalOptions
        @Argument(help: "What git asks: get, store or erase.") var operation: Operation

        func run() async throws {
            let request = try GitCredentialRequest.read()
            guard operation != .store, request.url != nil else { return }
            let named = AccountChoice.reference(nil, environment: ProcessInfo.processInfo.environment)
            if let agent = AgentSocket.remote(for: global.location.location) {
                return try await answer(request, named: named, through: agent)
            }
            let session = try await global.location.openStore()
            switch operation {
            case .get:
                switch try await session.gitAnswer(request, named: named) {
                // Written in one piece, never through the line escaping of Output: git reads it.
                case .answer(let given): if let text = given.text { writeAll(STDOUT_FILENO, text) }
                case .none(let reason?): Output.error(reason)
                case .none(nil): return
                }
            case .erase:
                try await session.gitErase(request, named: named)
            case .store:
                return
            }
        }

        /// git's question answered by `latchkey agent` at `path`, which decides it as this
        /// machine's store would (``Session/gitAnswer(_:named:)``): the host and git's username
        /// go with the request, and the agent's providers say whether the host gets a token.
        /// Plain http to another machine is refused here first, whatever the agent would say.
        private func answer(_ request: GitCredentialRequest, named: String?, through path: String) async throws {
            if request.protocol == "http", !EndpointSecurity.isLoopback(host: request.hostName),
                let refusal = GitHostRule.plainHTTP(host: request.host ?? "").refusal
            {
                Output.error(refusal + " (Through an agent, plain http goes to this machine only.)")
                return
            }
            let asked = AgentRequest(.gitToken, account: named, url: request.url)
            switch operation {
            case .get:
                let answer = try await RemoteAgent.answer(asked, at: path)
                // The agent's providers name no such host (or refuse it): git asks its other
                // helpers; a reason, when there is one, is said.
                if answer.failure == .refused || answer.failure == .notFound {
                    if let message = answer.message { Output.error(message) }
                    return
                }
                if let refusal = CLIError.refusal(answer) { throw refusal }
                guard let token = answer.token, answer.tokenType?.lowercased() != "dpop",
                    let text = GitCredentialRequest.answer(
                        for: CredentialMetadata(
                            preferredUsername: answer.account, issuer: answer.issuer ?? "", clientID: ""),
                        password: token, expiry: answer.expiresAt)
                else {
                    Output.error(
                        "No token for git from the agent: none, or one bound to a key (DPoP), which git cannot send.")
                    return
                }
                writeAll(STDOUT_FILENO, text)
            case .erase:
                guard let password = request.password else { return }
                _ = try await RemoteAgent.ask(
                    AgentRequest(.reject, account: named, accessToken: password), at: path)
            case .store:
                return
            }
        }
    }
}
