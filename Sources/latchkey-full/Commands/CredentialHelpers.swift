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
            guard operation != .store, let host = request.host, ["http", "https"].contains(request.protocol) else {
                return
            }
            if let agent = AgentSocket.remote(for: global.location.location) {
                return try await answer(request, through: agent)
            }
            let session = try await global.location.openStore()
            guard let entry = try await session.home.providers().first(where: { $0.gitHosts?.contains(host) == true })
            else { return }
            // A token sent over plain http is read by anyone on the path: https only, or http to
            // this machine, unless the provider was added with --git-allow-http on purpose.
            if request.protocol == "http", !EndpointSecurity.isLoopback(host: request.hostName),
                entry.gitAllowsHTTP != true
            {
                Output.error(
                    "No token for \(host) over plain http: git would send it in the clear. Use https, or add the provider with --git-allow-http."
                )
                return
            }
            guard let stored = try await gitAccount(of: entry, gitUsername: request.fields["username"], in: session)
            else { return }
            if stored.token.dpop != nil {
                // git sends a password as it is; a bound token is refused without a proof.
                Output.error(
                    "No token for \(host): the account's tokens are bound to its key (DPoP), and git cannot send the proof each request needs. Add the provider again without --dpop for git, and sign in with it."
                )
                return
            }
            let credential = try await session.credential(stored)
            switch operation {
            case .get:
                let token: String
                do {
                    token = try await credential.accessToken()
                } catch {
                    throw CLIError.provider(error, doing: "No token for \(host)")
                }
                let current = try await session.reading { () async throws(StorageError) in
                    try await session.store.credential(for: stored.id)
                }?.token
                let expiry = current?.accessToken == token ? current?.expiresAt : nil
                guard let answer = GitCredentialRequest.answer(for: stored.metadata, password: token, expiry: expiry)
                else {
                    Output.error("No answer for \(host): a value holds a line break or NUL, which git would misread.")
                    return
                }
                // Written in one piece, never through the line escaping of Output: git reads it.
                writeAll(STDOUT_FILENO, answer)
            case .erase:
                guard let password = request.password else { return }
                do {
                    try await credential.reject(accessToken: password)
                } catch {
                    throw CLIError.provider(error, doing: "The token for \(host) could not be marked rejected")
                }
            case .store:
                return
            }
        }

        /// The account that answers for `entry`'s hosts (``AccountChoice/gitAccount(among:named:default:)``),
        /// or `nil` after saying why there is none.
        /// git's question answered by `latchkey agent` at `path`: the agent's account (git's
        /// username, when it names one), its access token; `erase` tells the agent.
        private func answer(_ request: GitCredentialRequest, through path: String) async throws {
            let account = AccountChoice.reference(
                request.fields["username"], environment: ProcessInfo.processInfo.environment)
            switch operation {
            case .get:
                let answer = try await RemoteAgent.ask(AgentRequest(.token, account: account), at: path)
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
                _ = try await RemoteAgent.ask(AgentRequest(.reject, account: account, accessToken: password), at: path)
            case .store:
                return
            }
        }

        private func gitAccount(of entry: ProviderEntry, gitUsername: String?, in session: Session) async throws
            -> StoredCredential?
        {
            let named = AccountChoice.reference(nil, environment: ProcessInfo.processInfo.environment)
            let accounts = try await session.reading { () async throws(StorageError) in
                try await session.store.accounts()
            }.filter { session.providerName(of: $0) == entry.name }
            let current = try await session.defaultAccountID()
            switch AccountChoice.gitAccount(among: accounts, gitUsername: gitUsername, named: named, default: current) {
            case .success(let chosen):
                return try await session.reading { () async throws(StorageError) in
                    try await session.store.credential(for: chosen.id)
                }
            case .failure(.none(let named?)):
                Output.error(
                    "No account \(named) of the provider \(entry.name) ($LATCHKEY_ACCOUNT names it); sign in with `latchkey login --provider \(entry.name)`."
                )
            case .failure(.none(nil)):
                Output.error(
                    "No account of the provider \(entry.name); sign in with `latchkey login --provider \(entry.name)`.")
            case .failure(.several):
                Output.error(
                    "Several accounts of the provider \(entry.name); name one with git's `credential.<url>.username`, or make one the default with `latchkey use`."
                )
            }
            return nil
        }
    }
}
