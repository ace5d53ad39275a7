import Foundation
import HTTPTypes
import Latchkey
import LatchkeyAgent
import LatchkeyCommandLine

/// A command's side of `latchkey agent`: the request sent, and a refusal turned into the
/// tool's error and exit status (4 when the account must sign in again on the agent's machine).
enum RemoteAgent {
    static func ask(_ request: AgentRequest, at path: String) async throws -> AgentAnswer {
        let answer = try await answer(request, at: path)
        if let refusal = CLIError.refusal(answer) { throw refusal }
        return answer
    }

    /// The agent's answer, its refusals included, from a socket that is the user's own
    /// (``AgentSocketCheck``). The account is resolved here, once for every command, as the
    /// local store resolves it: the command's own, else `LATCHKEY_ACCOUNT`, else the agent's
    /// default.
    static func answer(_ request: AgentRequest, at path: String) async throws -> AgentAnswer {
        var request = request
        if request.operation != .stop {
            request.account = AccountChoice.reference(request.account, environment: ProcessInfo.processInfo.environment)
        }
        if let refusal = AgentSocketCheck.refusal(path) { throw CLIError.failed(refusal) }
        do {
            return try await AgentClient(path: path).ask(request)
        } catch {
            throw CLIError.failed(
                "\(error.description) Is `latchkey agent` running, and \(AgentSocket.variable) its socket?")
        }
    }

    /// Sends `request` with the agent's `Authorization` (and DPoP proof): once more after a
    /// refused token (the agent is told, and gives a new one) or a DPoP nonce challenge.
    static func send(
        _ request: HTTPRequest, body: Data?, account: String?, resource: String?, scopes: [String]?, at path: String,
        through transport: any HTTPTransport
    ) async throws -> HTTPTransportResponse {
        guard let url = request.url else { throw CLIError.input("The request has no URL.") }
        var nonce: String?
        var answer: HTTPTransportResponse?
        for attempt in 0..<2 {
            let authorization = try await ask(
                AgentRequest(
                    .authorize, account: account, resource: resource, scopes: scopes,
                    method: request.method.rawValue, url: url.absoluteString, nonce: nonce), at: path)
            var authorized = request
            authorized.headerFields[.authorization] = authorization.authorization
            if let proof = authorization.proof, let name = HTTPField.Name("DPoP") {
                authorized.headerFields[name] = proof
            }
            let sent: HTTPTransportResponse
            do {
                sent = try await transport.send(authorized, body: body, options: HTTPTransportOptions())
            } catch {
                throw CLIError(status: .unreachable, description: "The request was not answered: \(error)")
            }
            answer = sent
            guard attempt == 0, sent.response.status == .unauthorized else { break }
            let challenges = AuthenticationChallenge.parse(sent.response.headerFields[values: .wwwAuthenticate])
            if let name = HTTPField.Name("DPoP-Nonce"), let given = sent.response.headerFields[name], given != nonce,
                challenges.contains(where: { $0.error == .useDPoPNonce })
            {
                nonce = given
                continue
            }
            guard AuthenticationChallenge.rejectsToken(sent.response),
                let refused = authorization.authorization?.split(separator: " ", maxSplits: 1).last
            else { break }
            _ = try await ask(AgentRequest(.reject, account: account, accessToken: String(refused)), at: path)
        }
        guard let answer else { throw CLIError.failed("The request was not sent.") }
        return answer
    }
}
