package import Logging

extension Logger {
    /// A logger that discards everything: Latchkey's default, so the library is silent unless
    /// the application passes a logger of its own.
    package static func disabled(_ label: String) -> Logger {
        Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    }
}
