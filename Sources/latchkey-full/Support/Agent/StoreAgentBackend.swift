import Foundation
import HTTPTypes
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// What `latchkey agent` answers with: the opened store of this machine. Every token it hands
/// out comes from the account's ``Credential`` — refreshed, when it must be, once for every
/// caller and process, as any command's — and nothing else (no refresh token, no key) leaves it.
struct StoreAgentBackend: AgentBackend {
    let session: Session

    var storeName: String? { session.home.location.storeName }

    func answer(_ request: AgentRequest) async -> AgentAnswer {
        if request.operation == .gitToken { return await gitAnswer(request) }
        do {
            let stored = try await session.account(request.account)
            let credential = try await session.credential(stored)
            var answer = try await answer(request, credential: credential)
            answer.account = stored.metadata.displayName ?? stored.id.rawValue
            answer.issuer = stored.token.provider.issuer
            return answer
        } catch let error as CLIError {
            switch error.status {
            case .signInRequired: return .failed(.signInRequired, error.description)
            case .unreachable: return .failed(.unreachable, error.description)
            // Nobody is signed in on the agent's machine (a sign-out there): sign in there.
            case _ where request.account == nil:
                return .failed(
                    .signInRequired, "\(error.description) Sign in on the agent's machine: `latchkey login`.")
            default: return .failed(.notFound, error.description)
            }
        } catch let error as ProviderError {
            return Self.failure(error)
        } catch {
            return .failed(.failed, "The agent could not answer: \(error)")
        }
    }

    private func answer(_ request: AgentRequest, credential: Credential) async throws -> AgentAnswer {
        var request = request
        request.minimumValidity = try await Self.validity(request.minimumValidity, of: credential)
        let validity = request.minimumValidity ?? 60
        let resource = request.resource.flatMap(URL.init(string:))
        switch request.operation {
        case .token:
            if resource != nil || request.scopes != nil {
                let token = try await credential.resourceToken(
                    for: resource, scopes: request.scopes, minimumValidity: validity)
                return AgentAnswer(
                    token: token.accessToken, tokenType: token.tokenType, expiresAt: token.expiresAt,
                    scopes: token.scopes ?? token.requestedScopes)
            }
            // Asked for no margin: the library's own (60 s, or half a short token's life).
            let value =
                if let asked = request.minimumValidity {
                    try await credential.accessToken(validFor: asked)
                } else {
                    try await credential.accessToken()
                }
            let token = try await credential.token
            return AgentAnswer(
                token: value, tokenType: token.tokenType, expiresAt: token.expiresAt, scopes: token.scopes)
        case .idToken:
            let value = try await credential.idToken(minimumValidity: validity)
            return AgentAnswer(
                token: value, tokenType: "id_token", expiresAt: try await credential.token.idTokenExpiresAt)
        case .authorize:
            guard let url = request.url.flatMap(URL.init(string:)), EndpointSecurity.isAcceptable(url),
                let method = request.method.flatMap({ HTTPRequest.Method($0.uppercased()) })
            else {
                return .failed(.invalid, "Give a method and an https URL (plain http to this machine only).")
            }
            if let nonce = request.nonce { await credential.recordDPoPNonce(nonce, for: url) }
            let authorized = try await credential.authorized(
                HTTPRequest(method: method, url: url), resource: resource, scopes: request.scopes,
                minimumValidity: validity)
            let token = try await credential.token
            let expiry =
                resource != nil || request.scopes != nil
                ? token.resourceTokens[ResourceToken.key(resource: request.resource, scopes: request.scopes)]?.expiresAt
                : token.expiresAt
            return AgentAnswer(
                expiresAt: expiry, authorization: authorized.headerFields[.authorization],
                proof: authorized.headerFields.first { $0.name.canonicalName == "dpop" }?.value)
        case .reject:
            if let refused = request.accessToken { try await credential.reject(accessToken: refused) }
            return AgentAnswer(message: "Noted: the next token is a new one.")
        case .userInfo:
            return AgentAnswer(claims: try await credential.userInfo())
        case .refreshToken, .stop, .gitToken:
            return .failed(.refused, "Not something the agent's store answers.")
        }
    }

    /// git's question from a remote, decided as this machine's own `latchkey credential git`
    /// decides it (``Session/gitAnswer(_:named:)``): a host none of this store's providers names,
    /// or plain http where its provider does not allow it, gets a refusal, never a token.
    private func gitAnswer(_ request: AgentRequest) async -> AgentAnswer {
        guard let url = request.url, let asked = GitCredentialRequest(url: url) else {
            return .failed(.invalid, "Name git's host as protocol://host.")
        }
        do {
            switch try await session.gitAnswer(asked, named: request.account) {
            case .none(let reason):
                return .failed(
                    .refused,
                    reason
                        ?? "No provider of the agent's machine answers git for \(TerminalText.safe(asked.host ?? ""))."
                )
            case .answer(let given):
                var answer = AgentAnswer(token: given.token, tokenType: "Bearer", expiresAt: given.expiresAt)
                answer.account = given.metadata.preferredUsername ?? given.metadata.email
                answer.issuer = given.metadata.issuer
                return answer
            }
        } catch let error as CLIError {
            return .failed(error.status == .signInRequired ? .signInRequired : .failed, error.description)
        } catch let error as ProviderError {
            return Self.failure(error)
        } catch {
            return .failed(.failed, "The agent could not answer: \(error)")
        }
    }

    /// How long a token handed out must stay valid, as asked, but never longer than the account's
    /// tokens live: a token that must outlast its own lifetime would be refreshed at every
    /// request (a remote asking `minimumValidity: 1e300` would make every request a refresh).
    static func validity(_ asked: Double?, of credential: Credential) async throws -> Double? {
        guard let asked else { return nil }
        let token = try await credential.token
        let lifetime = token.expiresAt.map { $0.timeIntervalSince(token.issuedAt) } ?? 60
        guard !asked.isNaN else { return nil }
        return min(max(asked, 0), lifetime / 2)
    }

    /// What a provider's refusal tells the caller.
    static func failure(_ error: ProviderError) -> AgentAnswer {
        if error.requiresSignIn {
            return .failed(.signInRequired, "The account must sign in again, on the agent's machine: \(error)")
        }
        if error.code == .transport || error.code == .timedOut {
            return .failed(.unreachable, "The provider could not be reached: \(error)")
        }
        return .failed(.failed, "\(error)")
    }
}
