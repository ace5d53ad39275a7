import Foundation
import LatchkeyTestSupport
import Testing

/// A desktop keyring of a test's own: a D-Bus session bus (`dbus-daemon`) and, when `running`,
/// GNOME Keyring's Secret Service on it, unlocked with a password, keeping its files in a
/// temporary folder. ``environment`` is what a `latchkey` process needs to reach it.
///
/// The bus starts no service on demand (its configuration names no service directory): with
/// the system's session configuration, the test's first `secret-tool` had the bus start a
/// second, never-unlocked keyring daemon from Debian's `org.freedesktop.secrets.service`, and
/// the two took the service's name in turn — a store then met "Object does not exist at path
/// …/collection/login" (one CI run in a few).
struct PrivateKeyring {
    let folder: TemporaryFolder
    let bus: ChildProcess
    let daemon: ChildProcess?
    let environment: [String: String]

    static var isAvailable: Bool {
        ["/usr/bin/dbus-daemon", "/usr/bin/gnome-keyring-daemon", "/usr/bin/secret-tool"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Starts the bus and, when `running`, the keyring daemon; waits until secret-tool answers.
    static func start(running: Bool = true) async throws -> PrivateKeyring {
        let folder = try TemporaryFolder()
        let runtime = folder.file("run")
        try FileManager.default.createDirectory(
            atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let configuration = folder.file("bus.conf")
        try busConfiguration(listeningOn: folder.file("bus")).write(
            toFile: configuration, atomically: true, encoding: .utf8)
        let bus = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/dbus-daemon"),
            ["--config-file=\(configuration)", "--nofork", "--print-address=1"], input: "")
        let printed = try await bus.standardOutput(until: { $0.contains("\n") })
        let address = try #require(
            printed.split(separator: "\n").first.map(String.init), "dbus-daemon said no address")
        var environment = CLI.environment([
            "DBUS_SESSION_BUS_ADDRESS": address, "HOME": folder.file("home"),
            "XDG_DATA_HOME": folder.file("home/.local/share"), "XDG_RUNTIME_DIR": runtime,
        ])
        environment["DISPLAY"] = nil
        var daemon: ChildProcess?
        if running {
            let started = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/gnome-keyring-daemon"),
                ["--foreground", "--unlock", "--components=secrets"], environment: environment,
                input: "keyring-password")
            daemon = started
            try await waitUntilServed(environment)
        }
        return PrivateKeyring(folder: folder, bus: bus, daemon: daemon, environment: environment)
    }

    /// A session bus that anyone of this user may use, with no service directory: nothing is
    /// started on demand.
    private static func busConfiguration(listeningOn socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// Polls until a secret can be stored (and then clears it). A search answers as soon as the
    /// service is on the bus, but the login collection a store goes to is made a moment later,
    /// when the daemon has read its password: a test that stored then found "Object does not
    /// exist at path …/collection/login".
    private static func waitUntilServed(_ environment: [String: String]) async throws {
        let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(20))
        let probeItem = ["application", "latchkey-probe"]
        while true {
            let probe = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/secret-tool"), ["store", "--label", "latchkey probe"] + probeItem,
                environment: environment, input: "probe")
            if probe.status == 0, probe.stderr.isEmpty {
                _ = try await secretTool(["clear"] + probeItem, environment)
                return
            }
            guard ContinuousClock.now < deadline else {
                Issue.record("GNOME Keyring did not start: \(probe.stderr)")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func secretTool(_ arguments: [String], _ environment: [String: String]) async throws
        -> ChildProcess.Result
    {
        try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/secret-tool"), arguments, environment: environment, input: "")
    }

    /// What the keyring holds for the store at `database`, as secret-tool looks it up.
    func lookup(_ database: String) async throws -> ChildProcess.Result {
        try await Self.secretTool(["lookup", "application", "latchkey", "store", database], environment)
    }

    /// Runs `body` with a keyring that is stopped (and its folder removed) afterwards, also
    /// when `body` throws: the bus and the daemon are processes, which outlive the test runner.
    static func with(running: Bool = true, _ body: (PrivateKeyring) async throws -> Void) async throws {
        let keyring = try await start(running: running)
        do {
            try await body(keyring)
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
    }

    func stop() async {
        daemon?.send(signal: SIGTERM)
        _ = try? await daemon?.finish()
        bus.send(signal: SIGTERM)
        _ = try? await bus.finish()
        folder.cleanUp()
    }
}
