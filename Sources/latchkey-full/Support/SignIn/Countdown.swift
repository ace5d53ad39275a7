import Foundation
import NIOConcurrencyHelpers

/// A countdown on a terminal while the user signs in elsewhere (nothing on a pipe): a task that
/// is cancelled as soon as the sign-in ends, whichever way.
final class Countdown: Sendable {
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    func start(until deadline: Date, _ text: String) {
        guard Output.errorIsTerminal else { return }
        let ticking = Task {
            while !Task.isCancelled {
                let remaining = deadline.timeIntervalSinceNow.rounded(.down)
                let left = remaining.isFinite ? Int(min(max(remaining, -1), 99 * 3_600)) : -1
                guard left >= 0 else { return }
                Output.progress("\(text)… \(left / 60):\(String(format: "%02d", left % 60)) left")
                try? await Task.sleep(for: .seconds(1))
            }
        }
        task.withLockedValue { $0 = ticking }
    }

    /// Stops the countdown and waits until it has stopped writing.
    func stop() async {
        let ticking = task.withLockedValue { current -> Task<Void, Never>? in
            defer { current = nil }
            return current
        }
        ticking?.cancel()
        await ticking?.value
    }
}
