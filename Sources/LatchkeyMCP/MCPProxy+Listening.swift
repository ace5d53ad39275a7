import Foundation
import HTTPTypes
import Latchkey
import Logging

extension MCPProxy {
    /// Opens the server's own stream, once the session has started (MCP "Listening for messages
    /// from the server"). Not for tokens bound by DPoP: to a server that moves its nonce on at
    /// every use, a bound request is sent under the credential's lease (so that processes take
    /// turns with the nonce), and a stream held open for long would hold that lease.
    func startListening() async {
        guard configuration.listensForServerMessages, listener == nil, sessionID != nil else { return }
        guard await !sender.sendsInTurn() else { return }
        listener = Task { await self.listen() }
    }

    /// Keeps the server's stream open until cancelled: reopened from its last event when the
    /// server ends it, after the pause it asked for or a growing one after failures; given up
    /// when the server offers none (405) or no longer knows the session.
    private func listen() async {
        let stream = UUID()
        var pause = Duration.seconds(1)
        var position: String?
        while !Task.isCancelled, sessionID != nil, ended == nil {
            var request = self.request(.get, accepting: "text/event-stream")
            if let position { request.headerFields[.lastEventID] = position }
            let outcome = await exchange(request, body: nil, stream: stream, timeout: .seconds(3_600))
            position = positions[stream] ?? position
            switch outcome {
            case .success(let answer) where answer.response.status.kind == .successful:
                pause = .seconds(1)
            case .success(let answer) where [404, 405].contains(answer.response.status.code):
                logger.debug(
                    "the server offers no stream of its own", metadata: ["status": "\(answer.response.status.code)"])
                return
            case .success, .failure:
                pause = min(pause * 2, .seconds(30))
            }
            try? await Task.sleep(for: pause)
        }
    }
}
