import Crypto
import Foundation
import Latchkey

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a SQLite store: the folder (0700 when Latchkey creates it), the database and the
/// key file (0600). Every check here reports a problem and changes nothing that exists.
enum StoreFiles {
    static let keyLength = 32

    /// What the file system says of a path: its type, permission bits and size, or `nil` when
    /// nothing is there.
    private static func status(_ path: String) throws(StorageError) -> (type: FileAttributeType, mode: Int, size: Int)?
    {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            return (
                attributes[.type] as? FileAttributeType ?? .typeUnknown,
                (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0,
                (attributes[.size] as? NSNumber)?.intValue ?? 0
            )
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "The store's file cannot be examined.")
        }
    }

    /// Creates the folder (0700) when it is missing; otherwise checks that its owner can use it.
    static func prepareFolder(_ folder: String) throws(StorageError) {
        guard let info = try status(folder) else {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw folderError(folder, "cannot be created")
            }
            return
        }
        guard info.type == .typeDirectory else { throw folderError(folder, "is not a folder") }
        // Checked on the mode bits as well as with access(2), so that a folder its owner locked
        // is reported even to root, which access(2) lets through.
        guard info.mode & 0o700 == 0o700, access(folder, R_OK | W_OK | X_OK) == 0 else {
            throw folderError(folder, "cannot be read and written by its owner")
        }
    }

    /// Checks that an existing database file is a regular file its owner can read and write.
    /// - Returns: whether the file exists and is not empty.
    static func checkDatabaseFile(_ path: String) throws(StorageError) -> Bool {
        guard let info = try status(path) else { return false }
        guard info.type == .typeRegular else {
            throw StorageError(.fileNotAccessible, path: path, reason: "The credential database is not a regular file.")
        }
        guard info.mode & 0o600 == 0o600, access(path, R_OK | W_OK) == 0 else {
            throw StorageError(
                .fileNotAccessible, path: path,
                reason: "The credential database cannot be read and written by its owner.")
        }
        return info.size > 0
    }

    /// Creates an empty database file with mode 0600 unless one exists, so that SQLite (which
    /// gives its journal files the database's mode) never creates one with a wider mode.
    static func createDatabaseFile(_ path: String) throws(StorageError) {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The credential database cannot be created: \(errorText(code))."
            )
        }
        close(descriptor)
    }

    /// Reads the key file, or creates it (32 random bytes, mode 0600) when it is missing and the
    /// database is new. Two processes creating it at once end up with the same key.
    static func loadOrCreateKey(at path: String, databaseHasData: Bool) throws(StorageError) -> SymmetricKey {
        if let key = try readKey(at: path) { return key }
        guard !databaseHasData else {
            throw StorageError(
                .missingKeyFile, path: path,
                reason:
                    "The key file of an existing credential database is missing; without it the stored tokens cannot be opened."
            )
        }
        try createKey(at: path)
        guard let key = try readKey(at: path) else {
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The key file disappeared right after it was created.")
        }
        return key
    }

    /// The key in the file at `path`, or `nil` when there is no such file.
    private static func readKey(at path: String) throws(StorageError) -> SymmetricKey? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The key file cannot be read: \(errorText(code)).")
        }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: keyLength + 1)
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress.map { $0 + total }, bytes.count - total)
            }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw StorageError(
                    .fileNotAccessible, path: path, reason: "The key file cannot be read: \(errorText(code)).")
            }
            if count == 0 { break }
            total += count
        }
        guard total == keyLength else {
            throw StorageError(
                .invalidKeyFile, path: path,
                reason:
                    "The key file holds \(total > keyLength ? "more than \(keyLength)" : "\(total)") bytes; a Latchkey key file holds exactly \(keyLength)."
            )
        }
        return SymmetricKey(data: buffer[0..<keyLength])
    }

    /// Writes a new key to a private temporary file, then links it into place: the key file
    /// either does not exist or is complete, and an existing one is never replaced.
    private static func createKey(at path: String) throws(StorageError) {
        let temporary = "\(path).\(UUID().uuidString).tmp"
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The key file cannot be created: \(errorText(code)).")
        }
        defer { unlink(temporary) }
        let key = SymmetricKey(size: .bits256)
        let written = key.withUnsafeBytes { bytes in write(descriptor, bytes.baseAddress, bytes.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == keyLength, synced == 0 else {
            throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be written.")
        }
        if link(temporary, path) != 0 {
            let code = errno
            // Another process created the key first: use theirs.
            guard code == EEXIST else {
                throw StorageError(
                    .fileNotAccessible, path: path, reason: "The key file cannot be created: \(errorText(code)).")
            }
        }
    }

    private static func folderError(_ folder: String, _ problem: String) -> StorageError {
        StorageError(.folderNotAccessible, path: folder, reason: "The credential store's folder \(problem).")
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
