import Foundation
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
    /// (``AgentSocketCheck``).
    static func answer(_ request: AgentRequest, at path: String) async throws -> AgentAnswer {
        if let refusal = AgentSocketCheck.refusal(path) { throw CLIError.failed(refusal) }
        do {
            return try await AgentClient(path: path).ask(request)
        } catch {
            throw CLIError.failed(
                "\(error.description) Is `latchkey agent` running, and \(AgentSocket.variable) its socket?")
        }
    }
}
