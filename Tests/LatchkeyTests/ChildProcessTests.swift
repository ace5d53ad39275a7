import Foundation
import LatchkeyTestSupport
import Testing

/// The test harness's own promises: a test that waits for a child never waits forever.
@Suite("Child processes in tests")
struct ChildProcessTests {
    /// A server that fails to start ends before it says what the test waits for, while its
    /// standard input is still open: the wait ends with what it wrote, and so does `finish()`.
    @Test("a child that ends before it writes what the test waits for ends the wait")
    func endedBeforeWriting() async throws {
        let child = try await ChildProcess.start(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "echo 'address in use' >&2; echo starting; exit 3"])
        let said = try await child.standardOutput(until: { $0.contains("listening on") })
        #expect(said == "starting\n")
        let result = try await child.finish()
        #expect(result.status == 3)
        #expect(result.stderr == "address in use\n")
    }

    @Test("ports handed out are outside the ephemeral range and never the same twice")
    func freePorts() async throws {
        var ports: Set<Int> = []
        for _ in 0..<50 { ports.insert(try await FreePort.pick()) }
        #expect(ports.count == 50)
        #expect(ports.allSatisfy { (20000...32767).contains($0) })
    }
}
