import Foundation
import LatchkeyAgent
import NIOPosix

/// `--confirm`: asks on the agent's terminal (`/dev/tty`, else standard input when it is one)
/// whether a use may go ahead, as `ssh-add -c` does: one question at a time — a second request
/// waits until the first is answered — each naming the request it approves (who asks, the
/// operation, account, resource, scopes, git host or request), so that the one answer read
/// after a question is shown is that question's, and never approves another. No terminal, no answer within a minute, or anything but `y`: refused. The
/// terminal is read on NIO's thread pool, never on a task's.
actor TerminalConfirmation {
    static let shared = TerminalConfirmation()

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func ask(_ use: AgentUse) async -> Bool {
        await turn()
        defer { next() }
        return await Self.question(use)
    }

    /// Waits until no other question is on the terminal.
    private func turn() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the terminal to the next question, if one waits.
    private func next() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Asks about `use` and reads the answer (the only question on the terminal).
    private static func question(_ use: AgentUse) async -> Bool {
        let peer = use.peerUserID.map { "uid \($0)" } ?? "a process"
        // AgentRequest's description makes every value the remote sent visible.
        let question = "\nlatchkey agent: \(peer) asks for \(use.request). Allow this one request? [y/N] "
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
