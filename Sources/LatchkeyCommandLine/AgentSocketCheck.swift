/// Whether a command may ask the agent socket at a path: the socket must be the user's own, in
/// a folder no other user can write. On a shared machine, a socket anyone could have created
/// first (a fixed name in `/tmp`) would receive every request, and answer with tokens of its
/// own choosing. The socket's peer is checked again once connected (`SO_PEERCRED`).
package enum AgentSocketCheck {
    /// Why the socket at `path` is refused; `nil` when it may be used.
    package static func refusal(_ path: String) -> String? {
        let shown = TerminalText.safe(path)
        var socketStatus = stat()
        guard lstat(path, &socketStatus) == 0 else { return nil }  // Connecting says it is not there.
        guard socketStatus.st_mode & S_IFMT == S_IFSOCK else { return "\(shown) is not a socket." }
        guard socketStatus.st_uid == getuid() else {
            return
                "The agent socket \(shown) belongs to another user (uid \(socketStatus.st_uid)): refused, as it could answer with tokens of its own."
        }
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var folderStatus = stat()
        guard lstat(folder, &folderStatus) == 0 else { return nil }
        if folderStatus.st_mode & 0o022 != 0 {
            return
                "The agent socket \(shown) is in a folder other users can write (\(TerminalText.safe(folder))): refused, as another user could have put it there. Forward it into $XDG_RUNTIME_DIR, or a folder of mode 0700 (`mkdir -m 700 ~/.latchkey-agent`)."
        }
        return nil
    }

    /// The user id of the process at the other end of the connected unix socket `descriptor`
    /// (Linux's `SO_PEERCRED`); `nil` where the system does not say.
    package static func peerUserID(_ descriptor: Int32) -> UInt32? {
        #if os(Linux)
            // `struct ucred`: pid, uid, gid, three 32-bit fields.
            var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
            var length = socklen_t(MemoryLayout.size(ofValue: credentials))
            guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
            return credentials.1
        #else
            return nil
        #endif
    }
}
