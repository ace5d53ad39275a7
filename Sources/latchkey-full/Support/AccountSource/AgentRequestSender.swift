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
    let path: String
    let account: String?

    /// The nonces tried after a proof is refused for want of one: a few, never a loop.
    static let nonceRetries = 3

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
            case .nonceRequired(let given) where given != nonce && nonces < Self.nonceRetries:
                (nonce, nonces) = (given, nonces + 1)
            case .tokenRejected where !rejected:
                rejected = true
                try await ask(AgentRequest(.reject, account: account, accessToken: authorized.accessToken))
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
        guard let url = request.url else { throw ProviderError(.invalidArgument, reason: "The request has no URL.") }
        let answer = try await ask(
            AgentRequest(
                .authorize, account: account, resource: resource?.absoluteString, scopes: scopes,
                method: request.method.rawValue, url: url.absoluteString, nonce: nonce))
        var authorized = request
        let value = answer.authorization ?? ""
        authorized.headerFields[.authorization] = value
        if let proof = answer.proof, let name = HTTPField.Name("DPoP") { authorized.headerFields[name] = proof }
        return (authorized, value.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "")
    }

    /// The agent's answer; its refusal as a ``ProviderError`` carrying the command line's error.
    @discardableResult
    private func ask(_ request: AgentRequest) async throws(ProviderError) -> AgentAnswer {
        do {
            return try await RemoteAgent.ask(request, at: path)
        } catch {
            throw Self.wrapped(error)
        }
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
