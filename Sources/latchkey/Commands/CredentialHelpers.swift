import ArgumentParser
import Foundation
import Latchkey

/// `latchkey credential …`: tokens handed to the tools people already run.
struct CredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential", abstract: "Hand fresh tokens to other tools (git).", subcommands: [Git.self])

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
            let request = GitCredentialRequest.read()
            guard operation != .store, let host = request.host, ["http", "https"].contains(request.protocol) else {
                return
            }
            let session = try await global.location.openStore()
            guard let entry = try await session.home.providers().first(where: { $0.gitHosts?.contains(host) == true })
            else { return }
            guard let stored = try await gitAccount(of: entry, in: session) else { return }
            let credential = try await session.credential(stored)
            switch operation {
            case .get:
                let token: String
                do {
                    token = try await credential.accessToken()
                } catch {
                    throw CLIError.provider(error, doing: "No token for \(host)")
                }
                let current = try? await credential.token
                var answer = [
                    "username=\(stored.metadata.preferredUsername ?? stored.metadata.email ?? "oauth2")",
                    "password=\(token)",
                ]
                if let expiry = current?.accessToken == token ? current?.expiresAt : nil {
                    answer.append("password_expiry_utc=\(Int(expiry.timeIntervalSince1970))")
                }
                // Written in one piece, never through the line escaping of Output: git reads it.
                FileHandle.standardOutput.write(Data((answer.joined(separator: "\n") + "\n").utf8))
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

        /// The account that answers for `entry`'s hosts: the default account when it is one of
        /// the provider's, else the provider's only account.
        private func gitAccount(of entry: ProviderEntry, in session: Session) async throws -> StoredCredential? {
            let accounts = try await session.store.accounts().filter { session.providerName(of: $0) == entry.name }
            let chosen: AccountSummary
            if let current = try? await session.store.default, accounts.contains(where: { $0.id == current.id }) {
                return current
            } else if accounts.count == 1, let only = accounts.first {
                chosen = only
            } else {
                Output.error(
                    accounts.isEmpty
                        ? "No account of the provider \(entry.name); sign in with `latchkey login --provider \(entry.name)`."
                        : "Several accounts of the provider \(entry.name); make one the default with `latchkey use`.")
                return nil
            }
            return try await session.store.credential(for: chosen.id)
        }
    }
}

/// What git writes to a credential helper: `key=value` lines up to a blank line or the end
/// (git-credential(1), "INPUT/OUTPUT FORMAT").
struct GitCredentialRequest {
    var fields: [String: String] = [:]

    var `protocol`: String? { fields["protocol"] }
    var host: String? { fields["host"] }
    var password: String? { fields["password"] }

    static func read() -> GitCredentialRequest {
        var request = GitCredentialRequest()
        while let line = readLine(strippingNewline: true), !line.isEmpty {
            guard let equals = line.firstIndex(of: "=") else { continue }
            request.fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return request
    }
}
