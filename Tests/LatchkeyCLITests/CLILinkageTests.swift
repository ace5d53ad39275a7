import Foundation
import LatchkeyTestSupport
import Testing

/// What the `latchkey` binary loads at every start: git and kubectl start it on every operation.
@Suite("latchkey's shared libraries")
struct CLILinkageTests {
    /// On Linux, `URLRequest` (FoundationNetworking) brings libcurl, gnutls, krb5 and ldap; the
    /// core library keeps `URLRequest` in `LatchkeyURLRequest` so that the tool loads none of them.
    @Test(
        "the tool links neither FoundationNetworking nor libcurl",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd")))
    func noCurl() async throws {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/ldd"), [Executables.latchkey.path], input: "")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("libc.so"), "ldd listed the libraries")
        #expect(!result.stdout.contains("libcurl"))
        #expect(!result.stdout.contains("libFoundationNetworking"))
    }
}
