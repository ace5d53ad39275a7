import Foundation
import Latchkey
import LatchkeyCommandLine

/// The one answer to git's credential question, given by this machine's store whether git
/// asked here (`latchkey credential git`) or on a remote through `latchkey agent`: the host's
/// rule (``GitHostRule``) first, then the account of the host's provider, then its token.
extension Session {
    /// What git is answered with.
    enum GitAnswer {
        /// The account's token for the host: git reads ``GitToken/text``.
        case answer(GitToken)
        /// No answer; git asks its other helpers. `reason`, when there is one, is said on
        /// standard error (or in the agent's refusal).
        case none(reason: String?)
    }

    /// The answer to git's `get` for `request`, the account named `reference`
    /// (`LATCHKEY_ACCOUNT`) when git's username names none of the provider's.
    func gitAnswer(_ request: GitCredentialRequest, named reference: String?) async throws -> GitAnswer {
        let entry: ProviderEntry
        switch try await GitHostRule.decide(request, providers: home.providers()) {
        case .provider(let found): entry = found
        case let rule: return .none(reason: rule.refusal)
        }
        let host = TerminalText.safe(request.host ?? "")
        let chosen: StoredCredential
        switch try await gitAccount(of: entry, gitUsername: request.fields["username"], named: reference) {
        case .success(let stored): chosen = stored
        case .failure(let reason): return .none(reason: reason.message)
        }
        if chosen.token.dpop != nil {
            // git sends a password as it is; a bound token is refused without a proof.
            return .none(
                reason:
                    "No token for \(host): the account's tokens are bound to its key (DPoP), and git cannot send the proof each request needs. Add the provider again without --dpop for git, and sign in with it."
            )
        }
        let credential = try await credential(chosen)
        let token: String
        do {
            token = try await credential.accessToken()
        } catch {
            throw CLIError.provider(error, doing: "No token for \(host)")
        }
        let current = try await reading { () async throws(StorageError) in
            try await store.credential(for: chosen.id)
        }?.token
        let expiry = current?.accessToken == token ? current?.expiresAt : nil
        let answer = GitToken(metadata: chosen.metadata, token: token, expiresAt: expiry)
        guard answer.text != nil else {
            return .none(reason: "No answer for \(host): a value holds a line break or NUL, which git would misread.")
        }
        return .answer(answer)
    }

    /// The token git is given for a host, and whose it is.
    struct GitToken {
        var metadata: CredentialMetadata
        var token: String
        var expiresAt: Date?

        /// What git reads (``GitCredentialRequest/answer(for:password:expiry:)``).
        var text: String? { GitCredentialRequest.answer(for: metadata, password: token, expiry: expiresAt) }
    }

    /// `erase`: the account of the host's provider marks `password` rejected, so that its next
    /// `get` refreshes. Nothing for a host no provider names.
    func gitErase(_ request: GitCredentialRequest, named reference: String?) async throws {
        guard let password = request.password,
            case .provider(let entry) = try await GitHostRule.decide(request, providers: home.providers()),
            case .success(let stored) = try await gitAccount(
                of: entry, gitUsername: request.fields["username"], named: reference)
        else { return }
        let handle = try await credential(stored)
        do {
            try await handle.reject(accessToken: password)
        } catch {
            throw CLIError.provider(
                error, doing: "The token for \(TerminalText.safe(request.host ?? "")) could not be marked rejected")
        }
    }

    /// Why no account answers for a git host, said to a person.
    struct GitAccountProblem: Error {
        var message: String
    }

    /// The account that answers for `entry`'s hosts (``AccountChoice/gitAccount(among:gitUsername:named:default:)``).
    private func gitAccount(of entry: ProviderEntry, gitUsername: String?, named: String?) async throws
        -> Result<StoredCredential, GitAccountProblem>
    {
        let accounts = try await reading { () async throws(StorageError) in
            try await store.accounts()
        }.filter { providerName(of: $0) == entry.name }
        let current = try await defaultAccountID()
        let login = ShellCommand(["latchkey", "login", "--provider", entry.name])
        switch AccountChoice.gitAccount(among: accounts, gitUsername: gitUsername, named: named, default: current) {
        case .success(let chosen):
            let stored = try await reading { () async throws(StorageError) in
                try await store.credential(for: chosen.id)
            }
            guard let stored else { return .failure(GitAccountProblem(message: "The account \(chosen.id) is gone.")) }
            return .success(stored)
        case .failure(.none(let named?)):
            return .failure(
                GitAccountProblem(
                    message:
                        "No account \(TerminalText.safe(named)) of the provider \(entry.name) ($LATCHKEY_ACCOUNT names it); sign in with `\(login)`."
                ))
        case .failure(.none(nil)):
            return .failure(
                GitAccountProblem(message: "No account of the provider \(entry.name); sign in with `\(login)`."))
        case .failure(.several):
            return .failure(
                GitAccountProblem(
                    message:
                        "Several accounts of the provider \(entry.name); name one with git's `credential.<url>.username`, or make one the default with `latchkey use`."
                ))
        }
    }
}
