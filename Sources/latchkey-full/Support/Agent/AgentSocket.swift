import Foundation
import LatchkeyCommandLine

/// Where agent sockets are: `$XDG_RUNTIME_DIR/latchkey/` (a folder of mode 0700, as the
/// runtime directory is the user's alone), else `/tmp/latchkey-UID/`, made 0700 and refused
/// when another user owns it.
enum AgentSocket {
    /// The variable that names the agent's socket for the commands that use it.
    static let variable = "LATCHKEY_AGENT_SOCK"

    /// The folder the sockets go in, made when missing.
    static func folder() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let folder: String
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            folder = runtime + "/latchkey"
        } else {
            folder = "/tmp/latchkey-\(getuid())"
        }
        if mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw CLIError.failed("The agent's folder \(folder) cannot be made: \(String(cString: strerror(errno))).")
        }
        guard AgentSocketCheck.isPrivateFolder(folder) else {
            throw CLIError.failed(
                "The agent's folder \(folder) is not a folder of yours that only you can open; remove it, or give --socket."
            )
        }
        return folder
    }

    /// The owner's socket: `--socket`, else the folder's `agent.sock`.
    static func ownerPath(_ given: String?) throws -> String {
        if let given { return given }
        return try folder() + "/agent.sock"
    }

    /// Whether a command is to ask the agent rather than open a store: `LATCHKEY_AGENT_SOCK`
    /// names a socket, and this machine has no store (no PostgreSQL store named, no SQLite store
    /// in the home).
    static func remote(for location: HomeLocation) -> String? {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty, location.databaseURL == nil,
            !FileManager.default.fileExists(atPath: location.databasePath)
        else { return nil }
        return path
    }
}
