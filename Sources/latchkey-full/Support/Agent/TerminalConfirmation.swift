import Foundation
import LatchkeyAgent
import NIOPosix

/// `--confirm`: asks on the agent's terminal (`/dev/tty`, else standard input when it is one) whether a use may go ahead, one
/// question at a time, as `ssh-add -c` does. No terminal, no answer within a minute, or
/// anything but `y`: refused. The terminal is read on NIO's thread pool, never on a task's.
actor TerminalConfirmation {
    static let shared = TerminalConfirmation()

    func ask(_ use: AgentUse) async -> Bool {
        let peer = use.peerUserID.map { "uid \($0)" } ?? "a process"
        let question = "latchkey agent: \(peer) asks for \(use.request). Allow? [y/N] "
        let answer = try? await NIOThreadPool.singleton.runIfActive { () -> String? in
            // The controlling terminal; else a terminal on standard input (a session without one).
            var terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
            if terminal < 0, isatty(STDIN_FILENO) == 1 { terminal = dup(STDIN_FILENO) }
            guard terminal >= 0 else { return nil }
            defer { close(terminal) }
            _ = question.utf8CString.withUnsafeBufferPointer { write(terminal, $0.baseAddress, $0.count - 1) }
            var polled = pollfd(fd: terminal, events: Int16(POLLIN), revents: 0)
            guard poll(&polled, 1, 60_000) == 1 else { return nil }
            var bytes = [UInt8](repeating: 0, count: 64)
            let count = read(terminal, &bytes, bytes.count)
            guard count > 0 else { return nil }
            return String(decoding: bytes[..<count], as: UTF8.self)
        }
        return answer?.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() == "y"
    }
}
