import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// The check every command makes before a token leaves for a resource it names
/// (``ResourceTrust``): the resource's own metadata (RFC 9728) names the account's provider as
/// an authorization server, or the provider was added for the resource (`provider add
/// --resource`). Made before any token is asked for, whichever source (the store, an agent)
/// would give it.
enum ResourceGate {
    /// Returns when `resource` may be sent `issuer`'s tokens, the resources `paired` with the
    /// account's provider considered; throws the refusal, with the sign-in that mends it,
    /// otherwise.
    static func require(_ resource: URL, issuer: String, paired: [String]?) async throws {
        let pairings = (paired ?? []).compactMap(URL.init(string:))
        // A pairing the user made is known without asking the resource anything.
        if ResourceTrust.decide(resource: resource, issuer: issuer, metadata: nil, paired: pairings).isTrusted {
            return
        }
        let metadata: ProtectedResourceMetadata?
        do {
            metadata = try await ResourceDiscovery(transport: AsyncHTTPClientTransport.shared, timeout: .seconds(15))
                .metadataForTrust(of: resource)
        } catch {
            throw CLIError.failed(
                "No token was sent to \(TerminalText.safe(resource.absoluteString)): whose tokens it takes could not be read (\(TerminalText.safe(error.reason)))."
            )
        }
        let trust = ResourceTrust.decide(resource: resource, issuer: issuer, metadata: metadata, paired: pairings)
        guard case .untrusted(let servers) = trust else { return }
        let login = ShellCommand(["latchkey", "login", "--resource", resource.absoluteString])
        let named =
            servers.isEmpty
            ? "it publishes no protected resource metadata (RFC 9728) naming its authorization server"
            : "its metadata names \(servers.map { TerminalText.safe($0.absoluteString) }.joined(separator: ", ")) as its authorization server"
        throw CLIError.failed(
            "No token was sent to \(TerminalText.safe(resource.absoluteString)): the account's provider (\(TerminalText.safe(issuer))) did not issue tokens for it — \(named). Sign in for it with `\(login)`, or, if it does take this provider's tokens, add the provider with `--resource \(ShellCommand.word(resource.absoluteString))`."
        )
    }
}

extension Session {
    /// The resources the provider of `stored` was added for (`provider add --resource`).
    func pairedResources(of stored: StoredCredential) async throws -> [String]? {
        guard let name = providerName(of: stored) else { return nil }
        return try await home.providers().first { $0.name == name }?.resources
    }
}
