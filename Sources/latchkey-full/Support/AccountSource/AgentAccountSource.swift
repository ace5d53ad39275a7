import Foundation
import HTTPTypes
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// The accounts of `latchkey agent` at a socket, for a machine with no store: each question is
/// one request on the socket (``RemoteAgent``), answered by the agent's store through its own
/// ``StoreAccountSource``. Nothing here refreshes or decides what a token request means.
struct AgentAccountSource: AccountSource {
    let path: String
    let account: String?

    func token(_ asked: TokenAsk) async throws -> TokenDescription {
        guard !asked.force else {
            throw CLIError.input("--force is for the machine that holds the store, not an agent's.")
        }
        let answer = try await RemoteAgent.ask(
            AgentRequest(
                asked.idToken ? .idToken : .token, account: account, resource: asked.resource, scopes: asked.scopes,
                minimumValidity: asked.minimumValidity),
            at: path)
        guard let token = answer.token else { throw CLIError.failed("The agent gave no token.") }
        let stored = Token(
            accessToken: asked.idToken ? nil : token, tokenType: answer.tokenType ?? "Bearer",
            idToken: asked.idToken ? token : nil, scopes: answer.scopes, issuedAt: Date(), expiresAt: answer.expiresAt,
            provider: ProviderIdentity(issuer: answer.issuer ?? "", clientID: ""))
        return TokenDescription(
            token: token, idToken: asked.idToken, stored: stored, resource: asked.resourceURL, key: "",
            account: answer.account ?? account ?? "")
    }

    func requestSender() async throws -> any AuthorizedRequestSender {
        AgentRequestSender(source: self)
    }

    func authorization(for request: HTTPRequest, _ asked: TokenAsk, nonce: String?) async throws -> Authorization {
        guard let url = request.url else { throw CLIError.input("The request has no URL.") }
        let answer = try await RemoteAgent.ask(
            AgentRequest(
                .authorize, account: account, resource: asked.resource, scopes: asked.scopes,
                minimumValidity: asked.minimumValidity, method: request.method.rawValue, url: url.absoluteString,
                nonce: nonce),
            at: path)
        return Authorization(
            authorization: answer.authorization ?? "", proof: answer.proof, expiresAt: answer.expiresAt)
    }

    func userInfo() async throws -> [String: JSONValue] {
        try await RemoteAgent.ask(AgentRequest(.userInfo, account: account), at: path).claims ?? [:]
    }

    /// An agent's account widens its grant by a sign-in on the agent's machine, not here.
    func grantedScopes() async throws -> [String]? { nil }

    func reSignIn() async throws -> AccountReSignIn? { nil }

    /// The agent's machine holds the providers, and what the user paired with them.
    func trustBasis(resource: String?) async throws -> TrustBasis {
        let answer = try await RemoteAgent.ask(AgentRequest(.describe, account: account, resource: resource), at: path)
        return TrustBasis(
            account: answer.account, issuer: answer.issuer ?? "",
            paired: (answer.resources ?? []).compactMap(URL.init(string:)))
    }

    /// The agent's machine holds the providers.
    func hasProviders() async throws -> Bool { true }

    /// Plain http to another machine is refused here first, whatever the agent would say; the
    /// rest is the agent's to decide with its providers (`git-token`).
    func gitAnswer(_ request: GitCredentialRequest, named: String?) async throws -> Session.GitAnswer {
        if request.protocol == "http", !EndpointSecurity.isLoopback(host: request.hostName),
            let refusal = GitHostRule.plainHTTP(host: request.host ?? "").refusal
        {
            return .none(reason: refusal + " (Through an agent, plain http goes to this machine only.)")
        }
        let answer = try await RemoteAgent.answer(AgentRequest(.gitToken, account: named, url: request.url), at: path)
        // The agent's providers name no such host (or refuse it): git asks its other helpers.
        if answer.failure == .refused || answer.failure == .notFound { return .none(reason: answer.message) }
        if let refusal = CLIError.refusal(answer) { throw refusal }
        guard let token = answer.token, answer.tokenType?.lowercased() != "dpop" else {
            return .none(
                reason: "No token for git from the agent: none, or one bound to a key (DPoP), which git cannot send.")
        }
        return .answer(
            Session.GitToken(
                metadata: CredentialMetadata(
                    preferredUsername: answer.account, issuer: answer.issuer ?? "", clientID: ""),
                token: token, expiresAt: answer.expiresAt))
    }

    func gitErase(_ request: GitCredentialRequest, named: String?) async throws {
        guard let password = request.password else { return }
        _ = try await RemoteAgent.ask(AgentRequest(.reject, account: named, accessToken: password), at: path)
    }
}
