import Dispatch
import Latchkey
import LatchkeyCommandLine
import NIOConcurrencyHelpers

/// Every signal whose default action ends the process and that a user or the system sends
/// (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE) waits while a refresh answer is
/// on its way: the provider may have rotated the refresh token already, and a process that ends
/// before the answer is stored loses it (the next refresh would be a replay, which ends the
/// grant). Once the answer is stored, the signal ends the process as it would have (the shell
/// sees the signal's status). With no refresh under way a signal ends the process at once —
/// unless a sign-in is under way (``whileSigningIn(_:)``): it is cancelled instead, so that a
/// grant the provider issued is revoked rather than left alive. A prompt's echo is put back
/// first. SIGKILL cannot be caught.
enum SignalDeferral {
    /// The signals that wait.
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE]

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
        // A signal the parent ignores (`nohup` ignores SIGHUP) ends nothing: it stays ignored.
        let handled = signals.filter { !isIgnored($0) }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for number in handled { sigaddset(&blocked, number) }
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        for number in handled {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let first = received.withLockedValue { received in
                    defer { received = received ?? number }
                    return received == nil
                }
                Task {
                    await UninterruptibleWork.whenIdle()
                    // A second signal does not wait for a cancelled sign-in to clean up.
                    if first, let cancel = signingIn.withLockedValue({ $0 }) {
                        cancel()
                    } else {
                        end(by: number)
                    }
                }
            }
            source.resume()
            let holder = DispatchSourceHolder(source: source)
            sources.withLockedValue { $0.append(holder) }
        }
    }

    /// Whether `number`'s disposition is "ignore", as inherited from the parent.
    private static func isIgnored(_ number: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0 else { return false }
        #if canImport(Darwin)
            let handler = current.__sigaction_u.__sa_handler
        #else
            let handler = current.__sigaction_handler.sa_handler
        #endif
        return unsafeBitCast(handler, to: Int.self) == 1  // SIG_IGN
    }

    /// The first deferred signal received, if any.
    private static let received = NIOLockedValueBox<Int32?>(nil)

    /// What is undone before a signal ends the process (an agent's socket), in order.
    private static let cleanups = NIOLockedValueBox<[@Sendable () -> Void]>([])

    /// Has `cleanup` run before a signal ends the process: an agent removes its socket, which
    /// would otherwise stay for the next agent, or a remote host, to find and fail on.
    static func beforeEnding(_ cleanup: @escaping @Sendable () -> Void) {
        cleanups.withLockedValue { $0.append(cleanup) }
    }

    /// Cancels the sign-in under way, while there is one.
    private static let signingIn = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// Runs a sign-in `body` so that a signal cancels it instead of ending the process: the
    /// library then revokes (or queues the revocation of) any grant the provider issued, and
    /// the caller ends the process by the signal (``endIfSignalled()``) once `body` returned.
    static func whileSigningIn<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        signingIn.withLockedValue { $0 = { task.cancel() } }
        defer { signingIn.withLockedValue { $0 = nil } }
        // A signal that came before the sign-in began still ends it.
        if received.withLockedValue({ $0 }) != nil { task.cancel() }
        // A caller cancelled (an `mcp-proxy` whose client went away) cancels the sign-in too.
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Ends the process by the signal it received, if it received one: called on the way out, so
    /// that a command that finished while a signal waited still ends by that signal (the shell
    /// sees the signal's status, not success).
    static func endIfSignalled() {
        if let number = received.withLockedValue({ $0 }) { end(by: number) }
        // A write whose reader was gone: its SIGPIPE waits on the thread that wrote.
        if ReaderGone.happened { end(by: SIGPIPE) }
    }

    /// Ends the process by `number` as its default action would: the signal is blocked in every
    /// thread (see ``install()``), so it is unblocked in this one before it is raised here.
    private static func end(by number: Int32) -> Never {
        // A prompt's echo comes back. (What the command wrote is out already: it writes with
        // write(2), unbuffered. No `fflush(nil)`: that takes standard input's lock too, which a
        // prompt reading a line holds while it waits.)
        TerminalEcho.restore()
        for cleanup in cleanups.withLockedValue({ $0 }) { cleanup() }
        signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(number)
        // Not reached: the default action of each of these signals ends the process.
        exit(128 + number)
    }
}
