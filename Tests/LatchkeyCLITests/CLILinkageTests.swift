import Foundation
import LatchkeyTestSupport
import Testing

/// What the `latchkey` binaries load at every start: git and kubectl start `latchkey` on every operation.
@Suite("latchkey's shared libraries")
struct CLILinkageTests {
    /// On Linux, `URLRequest` (FoundationNetworking) brings libcurl, gnutls, krb5 and ldap; the
    /// core library keeps `URLRequest` in `LatchkeyURLRequest` so that the tool loads none of them.
    @Test(
        "neither half of the tool links FoundationNetworking or libcurl; the quick half not Foundation either",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd")))
    func noCurl() async throws {
        for binary in [Executables.latchkey, Executables.url("latchkey-full")] {
            let result = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ldd"), [binary.path], input: "")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("libc.so"), "ldd listed the libraries")
            #expect(!result.stdout.contains("libcurl"))
            #expect(!result.stdout.contains("libFoundationNetworking"))
        }
        // `latchkey` answers `token` with Foundation Essentials alone: no ICU, no CoreFoundation.
        let quick = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/ldd"), [Executables.latchkey.path], input: "")
        #expect(!quick.stdout.contains("libFoundation.so"))
        #expect(!quick.stdout.contains("libFoundationInternationalization"))
        #expect(!quick.stdout.contains("_FoundationICU"))
    }
}
