import LatchkeyCommandLine
import LatchkeyRecords

/// Hands the command to `latchkey-full`, the whole tool, which is installed beside this one:
/// the same process (exec), its arguments, environment, terminal and signals, so that nothing
/// tells the two apart but the time it takes. It never builds anything: SwiftPM builds
/// `latchkey-full` with this executable (the `BuildFullToolFirst` plugin).
enum Handover {
    static let fullToolName = FullTool.name

    /// Runs `latchkey-full` with `arguments` in this process. `input`, what was read of standard
    /// input already, is what the full tool reads on its standard input instead. The full tool
    /// is told this one's version (`LATCHKEY_HANDOVER_VERSION`) and the build identity of the full
    /// tool this one was built with (`LATCHKEY_HANDOVER_BUILD`), and refuses to run for another.
    static func run(_ arguments: [String], input: [UInt8]?) -> Never {
        let path = fullToolPath()
        if let input { refeed(input) }
        setenv(HandoverCheck.variable, LatchkeyVersion.current, 1)
        if let build = FullTool.buildIdentity { setenv(HandoverCheck.buildVariable, build, 1) }
        let argv = arguments.map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        writeAll(
            STDERR_FILENO,
            Array(
                "latchkey: \(path) cannot be started (\(reason)); \(fullToolName) is installed beside latchkey, and runs every command latchkey does not answer itself.\n"
                    .utf8))
        exit(1)
    }

    /// `latchkey-full` in the folder of this executable (links resolved, so that a link to
    /// `latchkey` elsewhere finds it).
    static func fullToolPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        #if os(Linux)
            let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            let executable =
                count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        #else
            var size = UInt32(buffer.count)
            let executable: String
            if _NSGetExecutablePath(&buffer, &size) == 0, let resolved = realpath(buffer, nil) {
                executable = String(cString: resolved)
                free(resolved)
            } else {
                executable = CommandLine.arguments.first ?? ""
            }
        #endif
        guard let slash = executable.lastIndex(of: "/") else { return fullToolName }
        return String(executable[...slash]) + fullToolName
    }

    /// Makes `input` standard input again: a pipe that holds it, then its end.
    private static func refeed(_ input: [UInt8]) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        #if os(Linux)
            // Room for the longest request git may send (the pipe holds 64 KiB by default):
            // F_SETPIPE_SZ, which Glibc's module leaves out (it is a GNU extension).
            let setPipeSize: Int32 = 1031
            _ = fcntl(ends[1], setPipeSize, 1 << 17)
        #endif
        writeAll(ends[1], input)
        close(ends[1])
        dup2(ends[0], STDIN_FILENO)
        close(ends[0])
    }
}
