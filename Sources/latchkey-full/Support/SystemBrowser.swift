import Foundation

/// Opens a URL in the user's browser: `$BROWSER` (a `:`-separated list of commands, each given
/// the URL, or with `%s` standing for it), else `xdg-open` on Linux and `open` on macOS. The
/// browser is started and left running; nothing waits for it.
enum SystemBrowser {
    /// Starts a browser on `url`; the command that was started, or nil when none could be (a
    /// machine with no browser: the printed URL is all there is).
    static func open(_ url: URL) -> String? {
        var commands: [[String]] = []
        if let variable = ProcessInfo.processInfo.environment["BROWSER"], !variable.isEmpty {
            for command in variable.split(separator: ":") {
                var words = command.split(separator: " ").map(String.init)
                guard !words.isEmpty else { continue }
                if words.contains(where: { $0.contains("%s") }) {
                    words = words.map { $0.replacingOccurrences(of: "%s", with: url.absoluteString) }
                } else {
                    words.append(url.absoluteString)
                }
                commands.append(words)
            }
        }
        #if os(macOS)
            commands.append(["open", url.absoluteString])
        #else
            commands.append(["xdg-open", url.absoluteString])
        #endif
        for command in commands where spawn(command) { return command[0] }
        return nil
    }

    /// Starts `command` (searched on `PATH`) with its output discarded; whether it started.
    private static func spawn(_ command: [String]) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The browser's chatter must not reach the terminal or the caller's pipes.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process reaches the browser: not the redirect listener's
        // socket, not a `--passphrase-fd` or `--key-fd` pipe, not the store's files.
        #if canImport(Darwin)
            let closesOthers = Int16(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #else
            // (`posix_spawn_file_actions_addclosefrom_np` is glibc's, behind `_GNU_SOURCE`, which
            // Swift's Glibc module does not define: each open descriptor is closed by name. A
            // close of one that was closed meanwhile is ignored by glibc.)
            let closesOthers: Int16 = 0
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            for descriptor in open.compactMap(Int32.init) where descriptor > 2 {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        #endif
        // The signals this process defers (``SignalDeferral``) are blocked in every thread of
        // it; the browser starts with their default actions and nothing blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in SignalDeferral.signals { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK) | closesOthers)
        var pid = pid_t()
        let arguments = command.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        return posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ) == 0
    }
}
