#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Handover {
    /// When this executable runs from a build folder of Latchkey's own package
    /// (`ROOT/.build/…/CONFIGURATION/latchkey`, `ROOT/Package.swift` beside `.build`), has
    /// SwiftPM build `latchkey-full` first when it is missing, or when a source changed since
    /// it was last built or checked: `swift run latchkey` builds this executable alone (SwiftPM
    /// builds a product's own dependencies), so that `swift run latchkey demo` from a fresh
    /// clone, after a pull or after a change to the full tool runs the tool as its sources
    /// are. One process builds while the others wait for it (a lock on `latchkey-full.lock`);
    /// `latchkey-full.checked` records when it last did. Installed anywhere else, nothing is built.
    static func buildIfInPackage(fullTool path: String) {
        guard let range = path.firstRange(of: "/.build/") else { return }
        let root = String(path[..<range.lowerBound])
        let components = path.split(separator: "/")
        guard components.count >= 2, ["debug", "release"].contains(components[components.count - 2]),
            modificationTime(root + "/Package.swift") != nil
        else { return }
        let stamp = path + ".checked"
        guard isStale(path, stamp: stamp, root: root) else { return }
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { return }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { return }
        }
        // Another process may have built it while this one waited.
        guard isStale(path, stamp: stamp, root: root) else { return }
        let command = [
            "swift", "build", "--package-path", root, "--scratch-path", root + "/.build", "-c",
            String(components[components.count - 2]), "--product", fullToolName,
        ]
        writeAll(
            STDERR_FILENO,
            Array(
                "latchkey: \(fullToolName) is missing or older than the sources: \(command.joined(separator: " "))\n"
                    .utf8))
        guard run(command) else {
            writeAll(STDERR_FILENO, Array("latchkey: the build of \(fullToolName) failed.\n".utf8))
            exit(1)
        }
        // Checked now: sources older than this need no build (SwiftPM may have had nothing to do).
        let checked = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if checked >= 0 {
            _ = futimens(checked, nil)
            close(checked)
        }
    }

    /// Whether `latchkey-full` is missing, or a source it is built from changed after it was
    /// built and after the last check: the manifest, the resolved versions, or a file of a
    /// target whose objects its link list names (a change to another target, this one's or a
    /// test's, leaves it as it is).
    private static func isStale(_ path: String, stamp: String, root: String) -> Bool {
        guard let built = modificationTime(path), let targets = linkedTargets(of: path, root: root) else { return true }
        let checked = max(built, modificationTime(stamp) ?? 0)
        return (modificationTime(root + "/Package.swift") ?? 0) > checked
            || (modificationTime(root + "/Package.resolved") ?? 0) > checked
            || targets.contains { hasFile(in: $0, newerThan: checked) }
    }

    /// The source folders of this package's targets that `latchkey-full` was linked from: its
    /// link list names each module's build folder (`NAME.build`), and `Sources/NAME` (or the
    /// target's name, with `-` for the module's `_`) is the package's own. `nil` when there is
    /// no link list (never built).
    private static func linkedTargets(of path: String, root: String) -> [String]? {
        guard let list = fopen(path + ".product/Objects.LinkFileList", "r") else { return nil }
        defer { fclose(list) }
        var modules: Set<String> = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, list) > 0, let line {
            // `…/debug/NAME.build/FILE.o`: the object's folder names its module.
            let components = String(cString: line).split(separator: "/")
            if components.count >= 2, components[components.count - 2].hasSuffix(".build") {
                modules.insert(String(components[components.count - 2].dropLast(".build".count)))
            }
        }
        return modules.flatMap { module in
            [module, module.replacing("_", with: "-")].map { root + "/Sources/" + $0 }
        }.filter { modificationTime($0) != nil }
    }

    /// Runs `command` (found on `PATH`) with its standard output on standard error (this
    /// command's own output is the answer), and waits for it; whether it succeeded.
    private static func run(_ command: [String]) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child = pid_t()
        guard posix_spawnp(&child, command[0], &actions, nil, argv, environ) == 0 else { return false }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 {
            guard errno == EINTR else { return false }
        }
        return status == 0
    }

    /// When the file at `path` was last changed, in nanoseconds; `nil` when there is none.
    private static func modificationTime(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
            return info.st_mtimespec.tv_sec * 1_000_000_000 + info.st_mtimespec.tv_nsec
        #else
            return info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec
        #endif
    }

    /// Whether a file under `folder` changed after `time`.
    private static func hasFile(in folder: String, newerThan time: Int) -> Bool {
        guard let directory = opendir(folder) else { return false }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            let path = folder + "/" + name
            if entry.pointee.d_type == UInt8(DT_DIR) {
                if hasFile(in: path, newerThan: time) { return true }
            } else if (modificationTime(path) ?? 0) > time {
                return true
            }
        }
        return false
    }
}
