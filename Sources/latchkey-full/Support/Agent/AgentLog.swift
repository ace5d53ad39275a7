import Foundation
import LatchkeyAgent
import NIOConcurrencyHelpers

/// The agent's record of every use, a line each (time, socket, the peer's user id, what was
/// asked and what came of it; never a token) appended to the home's `agent.log` (mode 0600),
/// and, for an agent in the foreground, written to its standard error too.
struct AgentLog: Sendable {
    let file: String
    let echo: Bool
    /// Appends are written one at a time.
    private let lock = NIOLock()

    init(file: String, echo: Bool) {
        self.file = file
        self.echo = echo
    }

    func write(_ use: AgentUse, socket: String) {
        let line = "\(Date().formatted(.iso8601)) \(socket) \(use)\n"
        lock.withLock {
            let descriptor = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            _ = line.utf8CString.withUnsafeBufferPointer { buffer in
                Foundation.write(descriptor, buffer.baseAddress, buffer.count - 1)
            }
        }
        if echo { FileHandle.standardError.write(Data(("latchkey agent: " + line).utf8)) }
    }
}
