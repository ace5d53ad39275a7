public import Latchkey
public import Logging
public import ServiceLifecycle

/// Sweeps a web app's sessions on a schedule: ends the sessions past their lifetime and removes
/// the pending sign-ins browsers never came back to (``Latchkey/WebSessions/sweep(batch:)``).
/// Run it beside the application, in its service group:
///
/// ```swift
/// let sweeper = WebSessionSweeper(sessions: sessions, logger: app.logger)
/// let group = ServiceGroup(configuration: .init(services: [app, sweeper], logger: app.logger))
/// ```
///
/// Every instance of a fleet may run one: the store decides who ends a session (exactly one
/// instance gets it back), and a pending sign-in is removed once.
public struct WebSessionSweeper: Service {
    /// The sessions it sweeps.
    public let sessions: WebSessions
    /// The time between sweeps.
    public let interval: Duration
    let logger: Logger

    /// Creates a sweeper that sweeps `sessions` every `interval` (a minute by default).
    public init(sessions: WebSessions, interval: Duration = .seconds(60), logger: Logger? = nil) {
        self.sessions = sessions
        self.interval = interval
        self.logger = logger ?? Logger(label: "latchkey.web.sweeper", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// Sweeps once now, then every ``interval`` until the service group shuts down. A store that
    /// fails is logged and tried again at the next sweep.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await sweepOnce()
                try await Task.sleep(for: interval)
            }
        }
    }

    private func sweepOnce() async {
        do {
            let swept = try await sessions.sweep()
            if swept.sessions + swept.signIns > 0 {
                logger.debug("swept", metadata: ["sessions": "\(swept.sessions)", "signIns": "\(swept.signIns)"])
            }
        } catch {
            logger.warning("sessions could not be swept", metadata: ["error": "\(error)"])
        }
    }
}
