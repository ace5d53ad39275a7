/// The tool's exit codes (the contract scripts rely on).
package enum ExitStatus: Int32, Sendable {
    case success = 0
    /// Failed; for signout: still signed in.
    case failed = 1
    /// Usage or input error.
    case usage = 2
    /// signout: signed out here, but a server step failed or was queued.
    case partial = 3
    /// The account must sign in again.
    case signInRequired = 4
    /// api: the server (or the provider) could not be reached, or did not answer in time.
    case unreachable = 5
}

/// An error the tool reports in one line and maps to an exit status.
package struct CLIError: Error, Sendable, CustomStringConvertible {
    package var status: ExitStatus
    package var description: String

    package init(status: ExitStatus, description: String) {
        self.status = status
        self.description = description
    }

    package static func input(_ message: String) -> CLIError { CLIError(status: .usage, description: message) }
    package static func failed(_ message: String) -> CLIError { CLIError(status: .failed, description: message) }
}
