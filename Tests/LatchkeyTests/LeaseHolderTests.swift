import LatchkeySQLite
import Testing

/// Who may still hold a SQLite lease, decided from the row alone, as a table.
@Suite("SQLite lease holders")
struct LeaseHolderTests {
    static let me = LeaseHost(name: "box", pid: 100, started: 5_000, pidNamespace: "pid:[1]", bootID: "boot-a")

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var holder: LeaseHost.Holder
        /// What `kill(pid, 0)` and `/proc/PID/stat` say here of the holder's pid.
        var process: (exists: Bool, started: Int64?) = (true, 7_000)
        var ownHolderRunning = false
        var alive: Bool
        var testDescription: String { name }
    }

    static func holder(
        host: String = "box", pid: Int64 = 200, started: Int64 = 7_000, namespace: String = "pid:[1]",
        boot: String = "boot-a", expires: Double = 1_000
    ) -> LeaseHost.Holder {
        LeaseHost.Holder(
            id: "h", host: host, pid: pid, started: started, pidNamespace: namespace, bootID: boot, expiresAt: expires)
    }

    static let rows: [Row] = [
        Row(name: "another process here, running, row current: alive", holder: holder(), alive: true),
        Row(
            name: "another process here that is gone: dead at once", holder: holder(), process: (false, nil),
            alive: false),
        Row(name: "its pid reused by another process: dead", holder: holder(), process: (true, 9_999), alive: false),
        Row(
            name: "a process here that renews nothing (stopped) past its row: others wait no longer",
            holder: holder(expires: 400), alive: false),
        Row(
            name: "another PID namespace, row current: alive, whatever runs here under its pid",
            holder: holder(pid: 1, started: 3, namespace: "pid:[2]"), process: (true, 1), alive: true),
        Row(
            name: "another PID namespace, row run out: dead",
            holder: holder(pid: 1, namespace: "pid:[2]", expires: 400),
            alive: false),
        Row(
            name: "another boot under the same name: judged by its row", holder: holder(boot: "boot-b", expires: 400),
            alive: false),
        Row(
            name: "a row of an earlier version, naming no namespace: judged by its row",
            holder: holder(namespace: "", boot: "", expires: 2_000), process: (false, nil), alive: true),
        Row(name: "another host: judged by its row", holder: holder(host: "other", expires: 2_000), alive: true),
        Row(
            name: "this process, in its body: alive", holder: holder(pid: 100, expires: 400), ownHolderRunning: true,
            alive: true),
        Row(name: "this process, a row left behind: dead", holder: holder(pid: 100), alive: false),
    ]

    @Test("the holder is alive or dead as the row and this machine say", arguments: rows)
    func table(_ row: Row) {
        let alive = row.holder.isAlive(
            now: 500, seenFrom: Self.me, process: { _ in row.process }, ownHolder: { _ in row.ownHolderRunning })
        #expect(alive == row.alive)
    }
}
