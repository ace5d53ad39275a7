import ArgumentParser
import Foundation
import Latchkey
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
            let description: TokenDescription
            do {
                description = try await global.accountSource(account).token(TokenAsk(idToken: token == .id))
            } catch let error as CLIError where error.status == .usage {
                throw CLIError(
                    status: error.status,
                    description:
                        "kubectl asked for a token, but there is no account to give one for: \(error.description) Sign in with `latchkey login`."
                )
            }
            if description.isBoundToKey {
                throw CLIError.input(
                    "kubectl cannot send the proof a DPoP-bound access token needs (the account's provider was added with --dpop): use the ID token (--token id), which is not bound, or a provider without --dpop."
                )
            }
            writeAll(
                STDOUT_FILENO,
                try ExecCredential(apiVersion: apiVersion, token: description.token, expiry: description.expiresAt).json
            )
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
            let source = global.accountSource(nil)
            switch operation {
            case .get:
                switch try await source.gitAnswer(request, named: named) {
                // Written in one piece, never through the line escaping of Output: git reads it.
                case .answer(let given): if let text = given.text { writeAll(STDOUT_FILENO, text) }
                case .none(let reason?): Output.error(reason)
                case .none(nil): return
                }
            case .erase:
                try await source.gitErase(request, named: named)
            case .store:
                return
            }
        }
    }
}
