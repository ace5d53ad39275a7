import NIOConcurrencyHelpers
// The one file that names Synchronization.Mutex: the lock it compares NIOLockedValueBox with
// (scripts/test refuses it anywhere else, because the thread sanitizer cannot see its futex).
import Synchronization

/// The lock under contention: 8 tasks, one lock, each taking it `rounds` times to add one to a
/// counter. `Synchronization.Mutex`, which Latchkey used until 0.9.0, against
/// `NIOLockedValueBox` (a `pthread_mutex_t`), which every lock of Latchkey is now, so that the
/// thread sanitizer sees them. Wall time for the whole round, median of the runs.
@MainActor
func lockFigures() async {
    let rounds = quick ? 20_000 : 200_000
    let runs = quick ? 5 : 15
    var mutex: [Double] = []
    var box: [Double] = []
    for _ in 0..<runs {
        // Alternating, so that a noisy moment hurts both alike.
        mutex.append(await contended(MutexCounter(), rounds: rounds))
        box.append(await contended(BoxCounter(), rounds: rounds))
    }
    record("locks.contended8.mutex.median", percentile(mutex, 0.5), "ms")
    record("locks.contended8.niolockedvaluebox.median", percentile(box, 0.5), "ms")
    record("locks.contended8.ratio", percentile(box, 0.5) / percentile(mutex, 0.5), "ratio")
}

/// A counter behind a lock.
protocol LockedCounter: Sendable {
    func increment()
    var value: Int { get }
}

final class MutexCounter: LockedCounter {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

final class BoxCounter: LockedCounter {
    private let count = NIOLockedValueBox(0)
    func increment() { count.withLockedValue { $0 += 1 } }
    var value: Int { count.withLockedValue { $0 } }
}

/// Eight tasks taking one lock `rounds` times each; the wall time in ms.
nonisolated func contended(_ counter: some LockedCounter, rounds: Int) async -> Double {
    let elapsed = await time {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<rounds { counter.increment() } }
            }
        }
    }
    precondition(counter.value == 8 * rounds, "the lock lost an increment")
    return elapsed
}
