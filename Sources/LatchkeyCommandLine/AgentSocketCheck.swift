/// Whether a command may ask the agent socket at a path: the socket must be the user's own, in
/// a folder no other user can write. On a shared machine, a socket anyone could have created
/// first (a fixed name in `/tmp`) would receive every request, and answer with tokens of its
/// own choosing. The socket's peer is checked again once connected (`SO_PEERCRED`). The
/// agent's own folder is checked here too (``isPrivateFolder(_:)``): one reading of a file's
/// owner and mode for both sides.
package enum AgentSocketCheck {
    /// What `lstat` says of a path: its kind, owner and permission bits.
    struct Status {
        var kind: mode_t
        var owner: uid_t
        var permissions: mode_t

        init?(_ path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return nil }
            (kind, owner, permissions) = (status.st_mode & S_IFMT, status.st_uid, status.st_mode & 0o7777)
        }
    }

    /// Why the socket at `path` is refused; `nil` when it may be used.
    package static func refusal(_ path: String) -> String? {
        let shown = TerminalText.safe(path)
        guard let socket = Status(path) else { return nil }  // Connecting says it is not there.
        guard socket.kind == S_IFSOCK else { return "\(shown) is not a socket." }
        guard socket.owner == getuid() else {
            return
                "The agent socket \(shown) belongs to another user (uid \(socket.owner)): refused, as it could answer with tokens of its own."
        }
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        if let status = Status(folder), status.permissions & 0o022 != 0 {
            return
                "The agent socket \(shown) is in a folder other users can write (\(TerminalText.safe(folder))): refused, as another user could have put it there. Forward it into $XDG_RUNTIME_DIR, or a folder of mode 0700 (`mkdir -m 700 ~/.latchkey-agent`)."
        }
        return nil
    }

    /// Whether `path` is a folder of this user's that only this user can open: where the agent
    /// puts its own sockets.
    package static func isPrivateFolder(_ path: String) -> Bool {
        guard let status = Status(path) else { return false }
        return status.kind == S_IFDIR && status.owner == getuid() && status.permissions & 0o077 == 0
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
