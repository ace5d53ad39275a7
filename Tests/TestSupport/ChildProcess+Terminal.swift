public import Foundation
import Subprocess
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ChildProcess {
    /// Runs `executable` with a new pseudo-terminal as its standard input, everything in `typed`
    /// already typed into it: what a script, `expect` or a password manager does when it answers
    /// as soon as a prompt shows. Standard output and standard error are pipes. A process still
    /// running after `limit` is killed (its status is then `SIGKILL`): a prompt that threw away
    /// its answer waits forever.
    public static func runOnTerminal(
        _ executable: URL, _ arguments: [String], environment: [String: String], typed: String, limit: Duration
    ) async throws -> Result {
        let terminal = try PseudoTerminal()
        defer { terminal.closeBoth() }
        try terminal.type(typed)
        var variables: [Environment.Key: String] = [:]
        for (name, value) in environment { variables[Environment.Key(stringLiteral: name)] = value }
        let result = try await Subprocess.run(
            .path(FilePath(executable.path)), arguments: Arguments(arguments), environment: .custom(variables),
            input: .fileDescriptor(FileDescriptor(rawValue: terminal.takeSecondary()), closeAfterSpawningProcess: true),
            output: .sequence, error: .sequence
        ) { execution in
            let processIdentifier = execution.processIdentifier.value
            let watchdog = Task {
                try await Task.sleep(for: limit)
                kill(processIdentifier, SIGKILL)
            }
            defer { watchdog.cancel() }
            async let stdout = Self.text(of: execution.standardOutput)
            async let stderr = Self.text(of: execution.standardError)
            return try await (stdout, stderr)
        }
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = code
        case .signaled(let signal): status = signal
        }
        return Result(status: status, stdout: result.closureResult.0, stderr: result.closureResult.1)
    }

    private static func text(of sequence: SubprocessOutputSequence) async throws -> String {
        var text = ""
        for try await chunk in sequence { text += chunk.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        return text
    }
}

/// A pseudo-terminal pair: the test keeps the primary side and types into it; the child gets the
/// secondary side as its standard input.
private final class PseudoTerminal {
    private var primary: Int32
    private var secondary: Int32

    init() throws {
        primary = PseudoTerminal.call.openpt(O_RDWR | O_NOCTTY)
        guard primary >= 0, PseudoTerminal.call.grantpt(primary) == 0, PseudoTerminal.call.unlockpt(primary) == 0
        else { throw Self.error() }
        var name = [CChar](repeating: 0, count: 256)
        guard PseudoTerminal.call.ptsname(primary, &name, name.count) == 0 else { throw Self.error() }
        secondary = open(
            String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), O_RDWR | O_NOCTTY)
        guard secondary >= 0 else { throw Self.error() }
    }

    /// Types `text`: it waits in the terminal's input queue, as keys pressed ahead do.
    func type(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(primary, $0.baseAddress, $0.count) }) == bytes.count else {
            throw Self.error()
        }
    }

    /// The secondary side, for the child (which then owns it).
    func takeSecondary() -> Int32 {
        defer { secondary = -1 }
        return secondary
    }

    func closeBoth() {
        if secondary >= 0 { close(secondary) }
        close(primary)
    }

    private static func error() -> POSIXError { POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }

    /// The C library's pseudo-terminal calls. Glibc's Swift module leaves them out (they sit
    /// behind `_XOPEN_SOURCE`), so on Linux they are looked up at run time.
    private struct Calls {
        typealias OnDescriptor = @convention(c) (CInt) -> CInt
        typealias Name = @convention(c) (CInt, UnsafeMutablePointer<CChar>, Int) -> CInt
        var openpt: OnDescriptor
        var grantpt: OnDescriptor
        var unlockpt: OnDescriptor
        var ptsname: Name
    }

    private static let call: Calls = {
        #if canImport(Glibc)
            let library = dlopen(nil, RTLD_NOW)
            func symbol<Function>(_ name: String, as type: Function.Type) -> Function {
                guard let address = dlsym(library, name) else {
                    preconditionFailure("the C library has no \(name)")  // a test machine without ptys
                }
                return unsafeBitCast(address, to: type)
            }
            return Calls(
                openpt: symbol("posix_openpt", as: Calls.OnDescriptor.self),
                grantpt: symbol("grantpt", as: Calls.OnDescriptor.self),
                unlockpt: symbol("unlockpt", as: Calls.OnDescriptor.self),
                ptsname: symbol("ptsname_r", as: Calls.Name.self))
        #else
            return Calls(
                openpt: { posix_openpt($0) }, grantpt: { grantpt($0) }, unlockpt: { unlockpt($0) },
                ptsname: { ptsname_r($0, $1, $2) })
        #endif
    }()
}
