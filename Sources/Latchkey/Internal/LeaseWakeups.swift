import NIOConcurrencyHelpers

/// Wakes the tasks of this process that wait for a lease another task of this process releases,
/// so that a lease passes from holder to holder at once within a process; waiters for a holder
/// in another process still poll (a storage backend has no other way to hear of it).
package final class LeaseWakeups: Sendable {
    /// The process's wakeups, shared by every storage object.
    package static let shared = LeaseWakeups()

    private final class Waiter: Sendable {
        private let continuation = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        private let done = NIOLockedValueBox(false)

        func park(_ continuation: CheckedContinuation<Void, Never>) {
            let resumeNow = done.withLockedValue { done -> Bool in
                if done { return true }
                self.continuation.withLockedValue { $0 = continuation }
                return false
            }
            if resumeNow { continuation.resume() }
        }

        /// Resumes the waiter, once.
        func resume() {
            let parked = done.withLockedValue { done -> CheckedContinuation<Void, Never>? in
                guard !done else { return nil }
                done = true
                return continuation.withLockedValue { $0.take() }
            }
            parked?.resume()
        }
    }

    private let waiters = NIOLockedValueBox<[String: [Waiter]]>([:])

    package init() {}

    /// Waits until the lease named `key` is released in this process, `timeout` has passed, or
    /// the task is cancelled, whichever comes first.
    package func wait(for key: String, atMost timeout: Duration) async {
        let waiter = Waiter()
        waiters.withLockedValue { $0[key, default: []].append(waiter) }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            waiter.resume()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { waiter.park($0) }
        } onCancel: {
            waiter.resume()
        }
        timer.cancel()
        waiters.withLockedValue { $0[key]?.removeAll { $0 === waiter } }
    }

    /// Wakes every task waiting for the lease named `key`.
    package func release(_ key: String) {
        let woken = waiters.withLockedValue { $0.removeValue(forKey: key) ?? [] }
        for waiter in woken { waiter.resume() }
    }
}
