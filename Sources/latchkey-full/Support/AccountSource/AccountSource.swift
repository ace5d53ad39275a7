import Foundation
import HTTPTypes
import Latchkey
import LatchkeyCommandLine

/// Where a command's account answers from: this machine's store (``StoreAccountSource``) or,
/// on a machine with no store, `latchkey agent` (``AgentAccountSource``). It is chosen once,
/// by ``GlobalOptions/accountSource(_:)``, and every command that reads a token — `token`,
/// `api`, `proof`, `userinfo`, `credential git` and `credential kubectl` — is written once over
/// it: the two answer the same questions, and refuse the same things. `latchkey agent` answers
/// a remote's request through the store's source too (`StoreAgentBackend`), so what a token
/// request means is decided in one place.
protocol AccountSource: Sendable {
    /// A token of the account, as `latchkey token` describes it.
    func token(_ asked: TokenAsk) async throws -> TokenDescription

    /// What sends requests with the account's tokens: its ``Credential`` on the store's
    /// machine, ``AgentRequestSender`` through an agent. `api` and `mcp-proxy` send through it.
    func requestSender() async throws -> any AuthorizedRequestSender

    /// The `Authorization` header (and for a bound token the `DPoP` proof) for one request.
    func authorization(for request: HTTPRequest, _ asked: TokenAsk, nonce: String?) async throws -> Authorization

    /// The account's claims from the provider's userinfo endpoint.
    func userInfo() async throws -> [String: JSONValue]

    /// The scopes the account's grant holds, where this source can widen them by a sign-in
    /// here; `nil` where it cannot (an agent's account signs in on the agent's machine).
    func grantedScopes() async throws -> [String]?

    /// How the account signs in again from here (``AccountReSignIn``); `nil` where it cannot
    /// (an agent's account signs in on the agent's machine).
    func reSignIn() async throws -> AccountReSignIn?

    /// What a resource is checked against before a token is asked for it (``ResourceGate``):
    /// the account's issuer and the resources the user paired with it. `resource` is the one the
    /// token would be asked for, if any: an agent's socket limited to others refuses here.
    func trustBasis(resource: String?) async throws -> TrustBasis

    /// Whether any provider is configured where the accounts are.
    func hasProviders() async throws -> Bool

    /// git's `get` for `request` (``Session/gitAnswer(_:named:)``): the account of the host's
    /// provider, the one `named` (`LATCHKEY_ACCOUNT`) names when git's username names none.
    func gitAnswer(_ request: GitCredentialRequest, named: String?) async throws -> Session.GitAnswer

    /// git's `erase`: the host's account marks `request.password` rejected.
    func gitErase(_ request: GitCredentialRequest, named: String?) async throws
}

extension AccountSource {
    /// `request` sent with the account's token (and DPoP proof), by ``requestSender()``: once
    /// more after the server refused the token (a new one replaces it) or asked for a new DPoP
    /// nonce.
    func send(
        _ request: HTTPRequest, body: Data?, resource: String?, scopes: [String]?, through transport: any HTTPTransport
    ) async throws -> HTTPTransportResponse {
        let sender = try await requestSender()
        do {
            return try await sender.send(
                request, body: body, resource: resource.flatMap(URL.init(string:)), scopes: scopes, through: transport,
                options: HTTPTransportOptions())
        } catch {
            // An agent's refusal, as the agent said it.
            if let refusal = error.underlying as? CLIError { throw refusal }
            if error.code == .transport || error.code == .timedOut {
                throw CLIError(status: .unreachable, description: "The request was not answered: \(error)")
            }
            throw CLIError.provider(error, doing: "The request failed")
        }
    }
}

/// What a token is asked for: the ID token or an access token (the account's own, or one for a
/// resource and narrower scopes), valid for how long, refreshed first or not.
struct TokenAsk: Sendable {
    var idToken = false
    var resource: String?
    var scopes: [String]?
    /// How long it must stay valid, in seconds; `nil` for the library's margin (60 s, or half a
    /// short token's life).
    var minimumValidity: Double?
    /// Refresh first (`token --force`): only where the store is.
    var force = false

    /// The resource as a URL.
    var resourceURL: URL? { resource.flatMap(URL.init(string:)) }
    /// The resource token's key in the stored token.
    var key: String { ResourceToken.key(resource: resourceURL?.absoluteString, scopes: scopes) }
}

/// The headers of one request: its `Authorization` value and, for a bound token, its proof.
struct Authorization: Sendable {
    var authorization: String
    var proof: String?
    var expiresAt: Date?
}

extension GlobalOptions {
    /// The source of the account `reference` names (else `LATCHKEY_ACCOUNT`, else the
    /// default): the agent `LATCHKEY_AGENT_SOCK` names when this machine has no store, else
    /// the store. The one place a command chooses.
    func accountSource(_ reference: String?) -> any AccountSource {
        let named = AccountChoice.reference(reference, environment: ProcessInfo.processInfo.environment)
        if let agent = AgentSocket.remote(for: location.location) {
            return AgentAccountSource(path: agent, account: named)
        }
        return StoreAccountSource(home: location, reference: reference)
    }
}

/// How an account signs in again: at its provider, with who it is as the `login_hint`.
struct AccountReSignIn: Sendable {
    /// The name of the account's provider.
    var provider: String
    /// The account's email or username, as its provider said.
    var loginHint: String?
}
