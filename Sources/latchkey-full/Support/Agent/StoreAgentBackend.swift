import Foundation
import HTTPTypes
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// What `latchkey agent` answers with: the opened store of this machine, asked through the same
/// ``StoreAccountSource`` a command on this machine asks, so a request means here what the
/// command means there. Every token it hands out comes from the account's ``Credential`` —
/// refreshed, when it must be, once for every caller and process — and nothing else (no
/// refresh token, no key) leaves it.
struct StoreAgentBackend: AgentBackend {
    let session: Session

    var storeName: String? { session.home.location.storeName }

    func answer(_ request: AgentRequest) async -> AgentAnswer {
        let source = StoreAccountSource(session: session, reference: request.account)
        do {
            return try await answer(request, from: source)
        } catch let error as CLIError {
            switch error.status {
            case .signInRequired:
                return .failed(.signInRequired, "\(error.description) Sign in again on the agent's machine.")
            case .unreachable: return .failed(.unreachable, error.description)
            // Nobody is signed in on the agent's machine (a sign-out there): sign in there.
            case .usage where request.account == nil && request.operation != .gitToken:
                return .failed(
                    .signInRequired, "\(error.description) Sign in on the agent's machine: `latchkey login`.")
            case .usage: return .failed(.notFound, error.description)
            default: return .failed(.failed, error.description)
            }
        } catch {
            return .failed(.failed, "The agent could not answer: \(error)")
        }
    }

    private func answer(_ request: AgentRequest, from source: StoreAccountSource) async throws -> AgentAnswer {
        let asked = TokenAsk(
            idToken: request.operation == .idToken, resource: request.resource, scopes: request.scopes,
            minimumValidity: request.minimumValidity)
        switch request.operation {
        case .token, .idToken:
            return AgentAnswer(try await source.token(asked))
        case .authorize:
            guard let url = request.url.flatMap(URL.init(string:)), EndpointSecurity.isAcceptable(url),
                let method = request.method.flatMap({ HTTPRequest.Method($0.uppercased()) })
            else {
                return .failed(.invalid, "Give a method and an https URL (plain http to this machine only).")
            }
            let given = try await source.authorization(
                for: HTTPRequest(method: method, url: url), asked, nonce: request.nonce)
            return AgentAnswer(expiresAt: given.expiresAt, authorization: given.authorization, proof: given.proof)
        case .reject:
            if let refused = request.accessToken { try await source.reject(accessToken: refused) }
            return AgentAnswer(message: "Noted: the next token is a new one.")
        case .userInfo:
            return AgentAnswer(claims: try await source.userInfo())
        case .describe:
            let basis = try await source.trustBasis(resource: request.resource)
            var answer = AgentAnswer(account: basis.account)
            answer.issuer = basis.issuer
            answer.resources = basis.paired.map(\.absoluteString)
            return answer
        case .gitToken:
            // Decided as this machine's own `latchkey credential git` decides it: a host none of
            // this store's providers names, or plain http where its provider does not allow it,
            // gets a refusal, never a token.
            guard let url = request.url, let git = GitCredentialRequest(url: url) else {
                return .failed(.invalid, "Name git's host as protocol://host.")
            }
            switch try await source.gitAnswer(git, named: request.account) {
            case .none(let reason):
                return .failed(
                    .refused,
                    reason ?? "No provider of the agent's machine answers git for \(TerminalText.safe(git.host ?? ""))."
                )
            case .answer(let given):
                var answer = AgentAnswer(token: given.token, tokenType: "Bearer", expiresAt: given.expiresAt)
                answer.account = given.metadata.preferredUsername ?? given.metadata.email
                answer.issuer = given.metadata.issuer
                return answer
            }
        case .refreshToken, .stop:
            return .failed(.refused, "Not something the agent's store answers.")
        }
    }
}

extension AgentAnswer {
    /// The answer that carries `description`'s token: what a remote's `latchkey token` shows.
    init(_ description: TokenDescription) {
        self.init(
            account: description.account, token: description.token,
            tokenType: description.idToken ? "id_token" : description.isBoundToKey ? "DPoP" : "Bearer",
            expiresAt: description.expiresAt, scopes: description.scope?.split(separator: " ").map(String.init))
        issuer = description.stored.provider.issuer
    }
}
