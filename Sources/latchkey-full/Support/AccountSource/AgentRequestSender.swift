import Foundation
import HTTPTypes
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// Requests sent with the tokens of an account `latchkey agent` holds: each request's
/// `Authorization` (and DPoP proof) comes from the agent, which refreshes and keeps nonces for
/// every process; what the server's answer means is ``ResourceAnswer``'s to say, as it is for
/// a ``Credential`` on the store's machine. A refusal of the agent's comes as a
/// ``ProviderError`` whose `underlying` is the command line's error.
struct AgentRequestSender: AuthorizedRequestSender {
    /// The agent's account, whose `authorization` gives each request's headers.
    let source: AgentAccountSource

    func send(
        _ request: HTTPRequest, body: Data?, resource: URL?, scopes: [String]?, through transport: any HTTPTransport,
        options: HTTPTransportOptions
    ) async throws(ProviderError) -> HTTPTransportResponse {
        var nonce: String?
        var nonces = 0
        var rejected = false
        while true {
            let authorized = try await authorized(request, resource: resource, scopes: scopes, nonce: nonce)
            let answer: HTTPTransportResponse
            do {
                answer = try await transport.send(authorized.request, body: body, options: options)
            } catch {
                throw ProviderError(
                    error.kind == .cancelled ? .cancelled : .transport,
                    reason: "The request was not answered: \(error)",
                    underlying: error)
            }
            switch ResourceAnswer.of(answer.response, body: answer.body) {
            case .nonceRequired(let given) where given != nonce && nonces < NonceRetries.maximum:
                (nonce, nonces) = (given, nonces + 1)
            case .tokenRejected where !rejected:
                rejected = true
                do {
                    _ = try await RemoteAgent.ask(
                        AgentRequest(.reject, account: source.account, accessToken: authorized.accessToken),
                        at: source.path)
                } catch {
                    throw Self.wrapped(error)
                }
            default:
                return answer
            }
        }
    }

    /// The agent holds no lease for a request sent here.
    func sendsInTurn() async -> Bool { false }

    /// `request` with the headers the agent gives for it, and the access token they carry.
    private func authorized(_ request: HTTPRequest, resource: URL?, scopes: [String]?, nonce: String?)
        async throws(ProviderError) -> (request: HTTPRequest, accessToken: String)
    {
        let given: Authorization
        do {
            given = try await source.authorization(
                for: request, TokenAsk(resource: resource?.absoluteString, scopes: scopes), nonce: nonce)
        } catch {
            throw Self.wrapped(error)
        }
        var authorized = request
        authorized.headerFields[.authorization] = given.authorization
        if let proof = given.proof, let name = HTTPField.Name("DPoP") { authorized.headerFields[name] = proof }
        return (authorized, given.authorization.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "")
    }

    /// `error` as a ``ProviderError`` of the kind its exit status says, carrying it.
    static func wrapped(_ error: any Error) -> ProviderError {
        guard let error = error as? CLIError else {
            return ProviderError(.invalidResponse, reason: "\(error)", underlying: error)
        }
        let code: ProviderError.Code =
            switch error.status {
            case .signInRequired: .signInRequired
            case .unreachable: .transport
            default: .invalidArgument
            }
        return ProviderError(code, reason: error.description, underlying: error)
    }
}
