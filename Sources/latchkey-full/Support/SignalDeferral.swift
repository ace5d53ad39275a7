import Dispatch
import Latchkey
import LatchkeyCommandLine
import NIOConcurrencyHelpers

/// SIGINT, SIGTERM and SIGHUP wait while a refresh answer is on its way: the provider may have
/// rotated the refresh token already, and a process that ends before the answer is stored loses
/// it (the next refresh would be a replay, which ends the grant). Once the answer is stored, the
/// signal ends the process as it would have (the shell sees the signal's status). With no
/// refresh under way a signal ends the process at once. SIGKILL cannot be caught.
enum SignalDeferral {
    /// The signals that wait.
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The dispatch sources that receive them, kept for the life of the process.
    private static let sources = NIOLockedValueBox<[DispatchSourceHolder]>([])

    /// A dispatch source, which the lock may hold.
    private struct DispatchSourceHolder: @unchecked Sendable {
        // Sendable by hand: the source is only kept alive here, never touched after `resume()`,
        // and dispatch sources are thread-safe objects.
        let source: any DispatchSourceSignal
    }

    /// Takes the signals over from their default action. Call it from the main thread before
    /// any other thread starts: the signals are blocked there, every later thread inherits that,
    /// and so each one stays pending until dispatch reads it from its `signalfd`. (Left
    /// unblocked in some thread, a signal can be delivered there instead, and dispatch's way of
    /// passing it on to its own thread can lose it.)
    static func install() {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for number in signals { sigaddset(&blocked, number) }
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        for number in signals {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                received.withLockedValue { $0 = $0 ?? number }
                Task {
                    await UninterruptibleWork.whenIdle()
                    end(by: number)
                }
            }
            source.resume()
            let holder = DispatchSourceHolder(source: source)
            sources.withLockedValue { $0.append(holder) }
        }
    }

    /// The first deferred signal received, if any.
    private static let received = NIOLockedValueBox<Int32?>(nil)

    /// Ends the process by the signal it received, if it received one: called on the way out, so
    /// that a command that finished while a signal waited still ends by that signal (the shell
    /// sees the signal's status, not success).
    static func endIfSignalled() {
        guard let number = received.withLockedValue({ $0 }) else { return }
        end(by: number)
    }

    /// Ends the process by `number` as its default action would: the signal is blocked in every
    /// thread (see ``install()``), so it is unblocked in this one before it is raised here.
    private static func end(by number: Int32) -> Never {
        // What the command printed reaches its reader first.
        fflush(nil)
        signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(number)
        // Not reached: the default action of the three signals ends the process.
        exit(128 + number)
    }
}
