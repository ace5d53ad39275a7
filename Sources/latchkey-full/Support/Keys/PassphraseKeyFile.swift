import Crypto
import CryptoExtras
import Foundation
import Latchkey
import LatchkeyCommandLine

/// The store's key in a file of its own, sealed under a passphrase, for machines without a
/// desktop keyring: the key is sealed (AES-GCM) with a key derived from the passphrase by scrypt
/// (memory-hard: 128 MiB a guess), so a copy of the home folder alone opens nothing.
struct PassphraseKeyFile: Codable {
    /// Names the format, so that a later one can be told apart.
    var format = "latchkey-passphrase-key-1"
    var kdf = "scrypt"
    /// scrypt's cost (N), block size (r) and parallelism (p).
    var n: Int
    var r: Int
    var p: Int
    /// Base64 of the salt and of the sealed key (nonce, ciphertext and tag).
    var salt: String
    var sealed: String

    /// The cost a new file gets: N = 2^17, r = 8, p = 1 (128 MiB and about half a second a
    /// guess; OWASP's floor for scrypt is N = 2^17). Files made with less still open.
    static let cost = (n: 1 << 17, r: 8, p: 1)

    /// The most a file may ask for: what scrypt needs (128·N·r·p bytes, as swift-crypto
    /// reserves it) at most 256 MiB, so that a file written by someone else cannot make every
    /// command take gigabytes (N = 2^20, r = 32, p = 16 would be 64 GiB).
    static let maximumMemory = 256 << 20

    /// The shortest passphrase a new file takes.
    static let minimumPassphraseLength = 8

    /// Whether scrypt's parameters are ones a Latchkey file may carry.
    static func isAcceptable(n: Int, r: Int, p: Int) -> Bool {
        guard n > 1, n <= 1 << 20, n & (n - 1) == 0, (1...32).contains(r), (1...16).contains(p) else { return false }
        return 128 * n * r * p <= maximumMemory
    }

    /// Seals `key` under `passphrase`.
    static func seal(_ key: SymmetricKey, passphrase: String) throws -> PassphraseKeyFile {
        guard passphrase.count >= minimumPassphraseLength else {
            throw CLIError.input(
                "The passphrase is shorter than \(minimumPassphraseLength) characters; choose a longer one. Nothing was changed."
            )
        }
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let wrapping = try derive(passphrase, salt: salt, n: cost.n, r: cost.r, p: cost.p)
        let box = try AES.GCM.seal(key.withUnsafeBytes { Data($0) }, using: wrapping)
        guard let combined = box.combined else { throw CLIError.failed("The key could not be sealed.") }
        return PassphraseKeyFile(
            n: cost.n, r: cost.r, p: cost.p, salt: salt.base64EncodedString(), sealed: combined.base64EncodedString())
    }

    /// The key, opened with `passphrase`; a wrong passphrase is an input error that changes nothing.
    func open(passphrase: String, path: String) throws -> SymmetricKey {
        guard format == "latchkey-passphrase-key-1", kdf == "scrypt", let salt = Data(base64Encoded: salt),
            let sealed = Data(base64Encoded: sealed)
        else { throw CLIError.failed("\(path) is not a passphrase-sealed Latchkey key file.") }
        guard Self.isAcceptable(n: n, r: r, p: p) else {
            throw CLIError.failed(
                "\(path) asks for a passphrase cost (scrypt N=\(n), r=\(r), p=\(p)) beyond what Latchkey accepts (\(Self.maximumMemory >> 20) MiB); it was not written by Latchkey. Nothing was changed."
            )
        }
        let wrapping = try Self.derive(passphrase, salt: salt, n: n, r: r, p: p)
        guard let box = try? AES.GCM.SealedBox(combined: sealed), let bytes = try? AES.GCM.open(box, using: wrapping),
            bytes.count == 32
        else { throw CLIError.input("The passphrase does not open \(path); nothing was changed.") }
        return SymmetricKey(data: bytes)
    }

    private static func derive(_ passphrase: String, salt: Data, n: Int, r: Int, p: Int) throws -> SymmetricKey {
        do {
            return try KDF.Scrypt.deriveKey(
                from: Data(passphrase.utf8), salt: salt, outputByteCount: 32, rounds: n, blockSize: r, parallelism: p)
        } catch {
            throw CLIError.failed("The key could not be derived from the passphrase: \(error)")
        }
    }

    /// Reads the file at `path`: a regular file (not a link) of the user's that no other user
    /// can read or write, as a plain key file must be.
    static func read(_ path: String) throws -> PassphraseKeyFile {
        let bytes: [UInt8]?
        do {
            bytes = try KeyFiles.readTrustedFile(
                at: path, what: "The passphrase-sealed key file", forbidden: KeyFiles.closedToOthers,
                fix: "chmod 600", limit: 64 << 10)
        } catch {
            throw CLIError.failed(error.description)
        }
        guard let bytes else { throw CLIError.input("The passphrase-sealed key file \(path) cannot be read.") }
        guard bytes.count <= 64 << 10, let file = try? JSONDecoder().decode(PassphraseKeyFile.self, from: Data(bytes))
        else {
            throw CLIError.failed("\(path) is not a passphrase-sealed Latchkey key file.")
        }
        return file
    }

    /// Writes a new file at `path` (mode 0600; an existing file is never replaced).
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            try KeyFiles.writePrivateFile(at: path, bytes: Array(try encoder.encode(self)) + [0x0A])
        } catch {
            throw CLIError.failed("\(path) cannot be written: \(error)")
        }
    }
}
