public import Crypto
import SystemPackage

/// The 256-bit key a store's tokens are sealed with, read as Latchkey trusts key files: a
/// regular file (not a link) of the user's that no other user can read or write, holding 32
/// bytes or their base64 on one line. For any store: the SQLite store's key file, the key of a
/// PostgreSQL store that the caller keeps in a file or hands over through a pipe.
public enum StoreKey {
    /// The key in the file at `path`.
    ///
    /// - Throws: ``StorageError/Code/fileNotAccessible`` when there is no such file or it
    ///   cannot be read, ``StorageError/Code/insecureFile`` when others could read or replace
    ///   it, and ``StorageError/Code/invalidKeyFile`` when it does not hold a key.
    public static func read(fromFile path: String) throws(StorageError) -> SymmetricKey {
        guard let key = try KeyFiles.readKeyFile(at: path) else {
            throw StorageError(.fileNotAccessible, path: path, reason: "There is no key file there.")
        }
        return key
    }

    /// The key read from an open file descriptor (a secret manager's pipe, say), to its end;
    /// the descriptor is closed.
    public static func read(fromDescriptor number: Int32) throws(StorageError) -> SymmetricKey {
        let descriptor = FileDescriptor(rawValue: number)
        defer { try? descriptor.close() }
        return try KeyFiles.readKey(from: descriptor, name: "file descriptor \(number)")
    }

    /// Writes a new random key to a new file at `path` (mode 0600 from the start, never
    /// replacing a file that is there) as base64 on one line, and returns it.
    ///
    /// - Throws: ``StorageError/Code/fileNotAccessible`` when the file cannot be created or a
    ///   file is already there.
    public static func generate(toNewFile path: String) throws(StorageError) -> SymmetricKey {
        let key = SymmetricKey(size: .bits256)
        guard try KeyFiles.createKeyFile(at: path, key: key, encoding: .base64) else {
            throw StorageError(
                .fileNotAccessible, path: path, reason: "A file is already there; Latchkey never replaces one.")
        }
        return key
    }
}
