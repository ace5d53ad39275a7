import Foundation
import LatchkeyTestSupport
import Testing

/// Debian's OpenSSH server on a loopback port, with a throwaway host key and user key, for
/// this user only: what `ssh -R` to a remote host looks like, on one machine.
struct LoopbackSSH {
    static let daemon = "/usr/sbin/sshd"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: daemon) }

    let process: ChildProcess
    let folder: TemporaryFolder
    let port: Int

    static func start() async throws -> LoopbackSSH {
        let folder = try TemporaryFolder()
        for key in ["host", "user"] {
            let made = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/ssh-keygen"), ["-q", "-t", "ed25519", "-N", "", "-f", folder.file(key)],
                input: "")
            #expect(made.status == 0, "\(made.stderr)")
        }
        try FileManager.default.copyItem(atPath: folder.file("user.pub"), toPath: folder.file("authorized_keys"))
        // As root, sshd wants its privilege separation folder (a service would have made it).
        if getuid() == 0 {
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        }
        let port = try await FreePort.pick()
        let configuration = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(folder.file("host"))
            AuthorizedKeysFile \(folder.file("authorized_keys"))
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            PidFile \(folder.file("sshd.pid"))
            AllowStreamLocalForwarding yes
            StreamLocalBindUnlink yes
            StreamLocalBindMask 0177
            """
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: folder.file("sshd_config")))
        let process = try await ChildProcess.start(
            URL(fileURLWithPath: daemon), ["-D", "-e", "-f", folder.file("sshd_config")], input: "")
        _ = try await process.standardError { $0.contains("Server listening") }
        return LoopbackSSH(process: process, folder: folder, port: port)
    }

    /// Runs `command` on the "remote host" through `ssh -R remote:local`: in an empty
    /// environment but for `LATCHKEY_AGENT_SOCK` (the forwarded socket) and an empty home.
    func run(forwarding local: String, _ command: [String]) async throws -> CLI.Run {
        let remote = folder.file("remote-\(UUID().uuidString.prefix(8)).sock")
        let home = folder.file("remote-home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let line =
            ["env", "-i", "HOME=\(home)", "PATH=/usr/bin:/bin", "LATCHKEY_AGENT_SOCK=\(remote)"] + command
        let arguments = [
            "-F", "/dev/null", "-i", folder.file("user"), "-p", "\(port)", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes",
            "-o", "LogLevel=ERROR", "-R", "\(remote):\(local)",
            "\(ProcessInfo.processInfo.userName)@127.0.0.1",
            line.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " "),
        ]
        return CLI.Run(
            try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ssh"), arguments, input: ""))
    }

    func stop() async {
        process.send(signal: SIGTERM)
        _ = try? await process.finish()
        folder.cleanUp()
    }
}
