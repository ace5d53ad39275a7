import Crypto
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing
import _CryptoExtras

/// The files that say where the store's key is and the passphrase that seals it, trusted as the
/// key file is; and what a browser the tool starts inherits from it: nothing.
@Suite("A passphrase-sealed key and the descriptors of the tool")
struct CLIPassphraseTests: DevProviderCLITest {
    static let passphrase = "correct horse"

    /// Signs alice in on `a` and moves the store's key to a passphrase-sealed file; returns it.
    func sealedHome(_ a: Device, in folder: TemporaryFolder, signIn: Bool = true) async throws -> String {
        if signIn { #expect(try await login(a, "alice").status == 0) }
        let sealed = folder.file("store.key.sealed")
        let moved = try await a.run(
            arguments: ["key", "move", "--to", "file", sealed, "--passphrase", "--passphrase-fd", "0"],
            input: Self.passphrase)
        try #require(moved.status == 0, "\(moved.stderr)")
        return sealed
    }

    @Test(
        "key-location.json and the sealed key file get the key file's checks: open to others or a symbolic link, they are refused with the fix"
    )
    func trustedFiles() async throws {
        try await withDevices { _, a, _ in
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let sealed = try await sealedHome(a, in: folder)
            let token = ["token", "--passphrase-fd", "0"]
            #expect(try await a.run(arguments: token, input: Self.passphrase).status == 0)
            let record = a.path + "/key-location.json"

            chmod(record, 0o666)
            let openRecord = try await a.run(arguments: token, input: Self.passphrase)
            #expect(openRecord.status == 1, "\(openRecord.stderr)")
            #expect(openRecord.stderr.contains("chmod go-w \(record)"), "\(openRecord.stderr)")
            chmod(record, 0o600)

            try FileManager.default.moveItem(atPath: record, toPath: record + ".elsewhere")
            try FileManager.default.createSymbolicLink(atPath: record, withDestinationPath: record + ".elsewhere")
            let linkedRecord = try await a.run(arguments: token, input: Self.passphrase)
            #expect(linkedRecord.status == 1, "\(linkedRecord.stderr)")
            #expect(linkedRecord.stderr.contains("symbolic link"), "\(linkedRecord.stderr)")
            try FileManager.default.removeItem(atPath: record)
            try FileManager.default.moveItem(atPath: record + ".elsewhere", toPath: record)

            chmod(sealed, 0o644)
            let openKey = try await a.run(arguments: token, input: Self.passphrase)
            #expect(openKey.status == 1, "\(openKey.stderr)")
            #expect(openKey.stderr.contains("chmod 600 \(sealed)"), "\(openKey.stderr)")
            chmod(sealed, 0o600)

            try FileManager.default.moveItem(atPath: sealed, toPath: sealed + ".elsewhere")
            try FileManager.default.createSymbolicLink(atPath: sealed, withDestinationPath: sealed + ".elsewhere")
            let linkedKey = try await a.run(arguments: token, input: Self.passphrase)
            #expect(linkedKey.status == 1, "\(linkedKey.stderr)")
            #expect(linkedKey.stderr.contains("symbolic link"), "\(linkedKey.stderr)")
            try FileManager.default.removeItem(atPath: sealed)
            try FileManager.default.moveItem(atPath: sealed + ".elsewhere", toPath: sealed)
            #expect(try await a.run(arguments: token, input: Self.passphrase).status == 0)
        }
    }

    @Test(
        "a sealed key file asking scrypt for gigabytes is refused before any is spent; a new file costs N=2^17; an old N=2^15 file still opens"
    )
    func scryptCost() async throws {
        try await withDevices { _, a, _ in
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            #expect(try await login(a, "alice").status == 0)
            let plainKey = try Data(contentsOf: URL(fileURLWithPath: a.path + "/credentials.sqlite.key"))
            let sealed = try await sealedHome(a, in: folder, signIn: false)
            let file = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sealed)))
                    as? [String: Any])
            #expect(file["n"] as? Int == 1 << 17, "\(file)")
            #expect(file["r"] as? Int == 8)

            // The hostile file: N=2^20, r=32, p=16.
            var hostile = file
            (hostile["n"], hostile["r"], hostile["p"]) = (1 << 20, 32, 16)
            try Self.writePrivate(try JSONSerialization.data(withJSONObject: hostile), to: sealed)
            let refused = try await a.run(arguments: ["token", "--passphrase-fd", "0"], input: Self.passphrase)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("beyond what Latchkey accepts"), "\(refused.stderr)")

            // A file an earlier version made, at N=2^15, still opens.
            // The key file holds the key's 32 bytes, or their base64 on one line.
            let key = try #require(
                plainKey.count == 32
                    ? plainKey
                    : Data(
                        base64Encoded: String(decoding: plainKey, as: UTF8.self).trimmingCharacters(
                            in: .whitespacesAndNewlines)))
            let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            let wrapping = try KDF.Scrypt.deriveKey(
                from: Data(Self.passphrase.utf8), salt: salt, outputByteCount: 32, rounds: 1 << 15, blockSize: 8,
                parallelism: 1)
            let box = try AES.GCM.seal(key, using: wrapping)
            let old: [String: Any] = [
                "format": "latchkey-passphrase-key-1", "kdf": "scrypt", "n": 1 << 15, "r": 8, "p": 1,
                "salt": salt.base64EncodedString(), "sealed": try #require(box.combined).base64EncodedString(),
            ]
            try Self.writePrivate(try JSONSerialization.data(withJSONObject: old), to: sealed)
            let opened = try await a.run(arguments: ["token", "--passphrase-fd", "0"], input: Self.passphrase)
            #expect(opened.status == 0, "\(opened.stderr)")
        }
    }

    @Test("a new passphrase shorter than 8 characters is refused with a message, and the key stays where it was")
    func shortPassphrase() async throws {
        try await withDevices { _, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let sealed = folder.file("store.key.sealed")
            let moved = try await a.run(
                arguments: ["key", "move", "--to", "file", sealed, "--passphrase", "--passphrase-fd", "0"],
                input: "short")
            #expect(moved.status == 2, "\(moved.stderr)")
            #expect(moved.stderr.contains("shorter than 8 characters"), "\(moved.stderr)")
            #expect(!FileManager.default.fileExists(atPath: sealed))
            #expect(FileManager.default.fileExists(atPath: a.path + "/credentials.sqlite.key"))
            #expect(try await a.run("token").status == 0)
        }
    }

    @Test(
        "the browser of login --browser inherits no descriptor of the tool: not the --passphrase-fd pipe, not the redirect listener's socket"
    )
    func browserInheritsNothing() async throws {
        try await withDevices { _, a, _ in
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            _ = try await sealedHome(a, in: folder)
            let passphraseFile = folder.file("passphrase")
            try Data((Self.passphrase + "\n").utf8).write(to: URL(fileURLWithPath: passphraseFile))
            // The browser writes down every descriptor it was started with, and what each is.
            let listing = folder.file("descriptors")
            let browser = folder.file("browser")
            try Data(
                """
                #!/usr/bin/python3
                import os
                lines = []
                for fd in sorted(os.listdir('/proc/self/fd'), key=int):
                    try:
                        lines.append(fd + ' ' + os.readlink('/proc/self/fd/' + fd))
                    except OSError:
                        pass  # the directory listdir read, closed since
                open('\(listing).tmp', 'w').write('\\n'.join(lines))
                os.rename('\(listing).tmp', '\(listing)')

                """.utf8
            ).write(to: URL(fileURLWithPath: browser))
            chmod(browser, 0o700)
            // Descriptor 3 is the passphrase, as a shell hands it over.
            let login = try await ChildProcess.start(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", #"exec "$0" "$@" 3<"\#(passphraseFile)""#, CLI.binary.path, "--home", a.path, "login",
                    "--browser", "--timeout", "30", "--passphrase-fd", "3",
                ], environment: CLI.environment(["BROWSER": browser]), input: "")
            _ = try await login.standardError { $0.contains("(opened with") }
            while !FileManager.default.fileExists(atPath: listing) { try await Task.sleep(for: .milliseconds(20)) }
            login.send(signal: SIGTERM)
            _ = try await login.finish()
            let inherited = try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n")
                .filter { line in (Int(line.prefix { $0 != " " }) ?? 0) > 2 }
            #expect(inherited.isEmpty, "the browser inherited \(inherited)")
        }
    }

    /// Replaces `path` with `data`, mode 0600.
    static func writePrivate(_ data: Data, to path: String) throws {
        try data.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }
}
