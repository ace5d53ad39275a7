import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// What a resource is checked against before a token is asked for it: the account's issuer and
/// the resources the user paired with it (its provider added for them, a sign-in for them, an
/// agent socket limited to them). Given by the account's source (``AccountSource/trustBasis()``),
/// the store's or an agent's.
struct TrustBasis: Sendable {
    /// The account, as it is shown.
    var account: String?
    /// The issuer of the account's provider.
    var issuer: String
    /// The resources the user paired with it.
    var paired: [URL]
}

/// The check every command makes before a token leaves for a resource it names
/// (``ResourceTrust``): the resource's own metadata (RFC 9728) names the account's provider as
/// an authorization server, the user paired the two (`provider add --resource`, `login
/// --resource`), or it lies at the issuer's own origin. Made before any token is asked for,
/// whichever source (the store, an agent) would give it: `api`, `proof`, `token --resource` and
/// `mcp-proxy` all ask it.
enum ResourceGate {
    /// Returns when `resource` may be sent tokens of the account `source` answers for (the
    /// token asked for `asked`, a resource of RFC 8707, when one is); throws the refusal, with
    /// the sign-in that mends it, otherwise.
    static func require(_ resource: URL, source: any AccountSource, asked: String?) async throws {
        try await require(resource, basis: source.trustBasis(resource: asked))
    }

    /// Returns when `resource` may be sent tokens of `basis`'s issuer; throws the refusal, with
    /// the sign-in that mends it, otherwise.
    static func require(_ resource: URL, basis: TrustBasis) async throws {
        // A pairing the user made, or the issuer's own origin, is known without asking the
        // resource anything.
        if ResourceTrust.decide(resource: resource, issuer: basis.issuer, paired: basis.paired) != nil { return }
        let metadata: ProtectedResourceMetadata?
        do {
            metadata = try await ResourceDiscovery(transport: AsyncHTTPClientTransport.shared, timeout: .seconds(15))
                .metadataForTrust(of: resource)
        } catch {
            let reason =
                "No token was sent to \(TerminalText.safe(resource.absoluteString)): whose tokens it takes could not be read (\(TerminalText.safe(error.reason))). \(remedy(resource))"
            if error.code == .unreachable {
                throw CLIError(status: .unreachable, description: reason)
            }
            throw CLIError.failed(reason)
        }
        let trust = ResourceTrust.decide(
            resource: resource, issuer: basis.issuer, metadata: metadata, paired: basis.paired)
        guard case .untrusted(let servers) = trust else { return }
        let named =
            servers.isEmpty
            ? "it publishes no protected resource metadata (RFC 9728) naming its authorization server"
            : "its metadata names \(servers.map { TerminalText.safe($0.absoluteString) }.joined(separator: ", ")) as its authorization server"
        throw CLIError.failed(
            "No token was sent to \(TerminalText.safe(resource.absoluteString)): the account's provider (\(TerminalText.safe(basis.issuer))) did not issue tokens for it — \(named). \(remedy(resource))"
        )
    }

    /// The sign-in for `resource`, as every hint names it: `login` picks the provider the
    /// resource's metadata names, and the browser unless told otherwise.
    static func signIn(for resource: String, loginHint: String? = nil) -> [String] {
        ["latchkey", "login", "--resource", resource] + (loginHint.map { ["--login-hint", $0] } ?? [])
    }

    /// What mends a refusal for `resource`: a sign-in for it, or the provider paired with it.
    private static func remedy(_ resource: URL) -> String {
        let login = ShellCommand(signIn(for: resource.absoluteString))
        return
            "Sign in for it with `\(login)`, or, if it does take this provider's tokens, add the provider with `--resource \(ShellCommand.word(resource.absoluteString))`."
    }
}

extension Session {
    /// What resources are checked against for `stored`: its issuer, the resources its provider
    /// was added for (`provider add --resource`) and those its grant was asked for at sign-in.
    func trustBasis(of stored: StoredCredential) async throws -> TrustBasis {
        var added: [String] = []
        if let name = providerName(of: stored) {
            added = try await home.providers().first { $0.name == name }?.resources ?? []
        }
        let paired = added + (stored.token.resources ?? [])
        return TrustBasis(
            account: stored.metadata.displayName ?? stored.id.rawValue, issuer: stored.token.provider.issuer,
            paired: paired.compactMap(URL.init(string:)))
    }
}
