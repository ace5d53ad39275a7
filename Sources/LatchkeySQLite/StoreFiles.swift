import Crypto
import Foundation
import Latchkey
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a SQLite store — the folder, the database, the key file — and what Latchkey
/// trusts about them. Like ssh's StrictModes: each must belong to the user and be closed to
/// other users' writes (the key file to their reads too), files are opened without following
/// symbolic links, and a key file that existed before its database is never adopted. Every
/// refusal names the file and says how to fix it; nothing here changes a file that exists.
enum StoreFiles {
    static let keyLength = 32

    /// The user the store belongs to.
    static var user: UserID { UserID(rawValue: geteuid()) }

    /// What a path is, or `nil` when nothing is there.
    private static func status(_ path: String, followingLinks: Bool) throws(StorageError) -> Stat? {
        do {
            return try FilePath(path).stat(followTargetSymlink: followingLinks)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StorageError(.fileNotAccessible, path: path, reason: "The store's file cannot be examined: \(error).")
        }
    }

    /// Checks the owner and the permission bits `forbidden` to group and others.
    private static func checkTrust(
        _ info: Stat, path: String, what: String, forbidden: FilePermissions, fix: String
    ) throws(StorageError) {
        guard info.userID == user else {
            throw StorageError(
                .insecureFile, path: path,
                reason:
                    "\(what) belongs to user \(info.userID.rawValue), not to you (user \(user.rawValue)): someone else could replace it. Use a store of your own, or `chown` it to yourself."
            )
        }
        let open = info.permissions.intersection(forbidden)
        guard open.isEmpty else {
            throw StorageError(
                .insecureFile, path: path,
                reason:
                    "\(what) is open to other users (mode \(String(info.permissions.rawValue & 0o777, radix: 8))). Fix it with `\(fix) \(path)`."
            )
        }
    }

    /// Creates the folder (0700) when it is missing; otherwise checks that it is a folder of the
    /// user's, closed to other users' writes, that its owner can use.
    static func prepareFolder(_ folder: String) throws(StorageError) {
        guard let info = try status(folder, followingLinks: true) else {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw folderError(folder, "cannot be created")
            }
            return
        }
        guard info.type == .directory else { throw folderError(folder, "is not a folder") }
        try checkTrust(
            info, path: folder, what: "The credential store's folder", forbidden: [.groupWrite, .otherWrite],
            fix: "chmod go-w")
        // Checked on the mode bits as well as with access(2), so that a folder its owner locked
        // is reported even to root, which access(2) lets through.
        guard info.permissions.contains(.ownerReadWriteExecute), access(folder, R_OK | W_OK | X_OK) == 0 else {
            throw folderError(folder, "cannot be read and written by its owner")
        }
    }

    /// What is at the database's path.
    struct DatabaseFile {
        /// Whether a file is there.
        var exists: Bool
        /// Whether it holds data (a store that was created and written).
        var hasData: Bool
    }

    /// Checks an existing database file: a regular file (not a link) of the user's, closed to
    /// other users' writes, that its owner can read and write.
    static func checkDatabaseFile(_ path: String) throws(StorageError) -> DatabaseFile {
        guard let info = try status(path, followingLinks: false) else {
            return DatabaseFile(exists: false, hasData: false)
        }
        guard info.type != .symbolicLink else {
            throw StorageError(
                .insecureFile, path: path,
                reason: "The credential database is a symbolic link; Latchkey opens only a file of its own there.")
        }
        guard info.type == .regular else {
            throw StorageError(.fileNotAccessible, path: path, reason: "The credential database is not a regular file.")
        }
        try checkTrust(
            info, path: path, what: "The credential database", forbidden: [.groupWrite, .otherWrite],
            fix: "chmod go-w")
        guard info.permissions.contains(.ownerReadWrite), access(path, R_OK | W_OK) == 0 else {
            throw StorageError(
                .fileNotAccessible, path: path,
                reason: "The credential database cannot be read and written by its owner.")
        }
        return DatabaseFile(exists: true, hasData: info.size > 0)
    }

    /// Creates an empty database file with mode 0600, exclusively, so that SQLite (which gives
    /// its journal files the database's mode) never creates one with a wider mode.
    /// - Returns: whether this call created it (`false` when another process just did).
    static func createDatabaseFile(_ path: String) throws(StorageError) -> Bool {
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: .ownerReadWrite)
            try descriptor.close()
            return true
        } catch let error as Errno where error == .fileExists {
            return false
        } catch {
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The credential database cannot be created: \(error).")
        }
    }

    /// Removes the empty database file this process just created, when the store cannot be made.
    static func removeNewDatabaseFile(_ path: String) {
        if let info = try? status(path, followingLinks: false), info.size == 0 { unlink(path) }
    }

    /// The store's key from its key file, or a new one when there is none and the database is new.
    ///
    /// - Parameters:
    ///   - database: what was at the database's path before this open.
    ///   - createdDatabase: whether this open created the database file.
    ///   - besideDatabase: whether the key file is the one Latchkey names after the database (a
    ///     key file the caller names on purpose may exist before its database).
    static func loadOrCreateKey(
        at path: String, database: DatabaseFile, createdDatabase: Bool, besideDatabase: Bool
    ) throws(StorageError) -> SymmetricKey {
        if let key = try readKeyFile(at: path) {
            // A key file beside a database that did not exist is someone else's, or a leftover:
            // adopting it would seal the new tokens with a key another may know.
            guard !(besideDatabase && createdDatabase) else {
                throw StorageError(
                    .insecureFile, path: path,
                    reason:
                        "A key file exists for a credential database that did not; Latchkey never adopts one. If it is a leftover of yours, remove it."
                )
            }
            return key
        }
        guard !database.hasData else {
            throw StorageError(
                .missingKeyFile, path: path,
                reason:
                    "The key file of an existing credential database is missing; without it the stored tokens cannot be opened."
            )
        }
        // Only the process that created the database file makes its key; so a creator that finds
        // a key knows it was there before. Others wait for the creator to finish.
        guard createdDatabase || !besideDatabase else {
            throw StorageError(
                .busy, path: path,
                reason:
                    "The credential database is empty and has no key yet: another Latchkey is creating it. If none is, remove the empty database file."
            )
        }
        try createKeyFile(at: path, key: SymmetricKey(size: .bits256), encoding: .raw)
        guard let key = try readKeyFile(at: path) else {
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The key file disappeared right after it was created.")
        }
        return key
    }

    /// The key in the file at `path` — 32 bytes, or their base64 on one line — or `nil` when
    /// there is no such file. The file must be a regular file (not a link) of the user's that
    /// no other user can read or write.
    static func readKeyFile(at path: String) throws(StorageError) -> SymmetricKey? {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
        } catch let error as Errno {
            switch error {
            case .noSuchFileOrDirectory: return nil
            case .tooManySymbolicLinkLevels:
                throw StorageError(
                    .insecureFile, path: path,
                    reason: "The key file is a symbolic link; Latchkey reads only a file there."
                )
            default:
                throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be read: \(error).")
            }
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be read.")
        }
        defer { try? descriptor.close() }
        do {
            let info = try descriptor.stat()
            guard info.type == .regular else {
                throw StorageError(.invalidKeyFile, path: path, reason: "The key file is not a regular file.")
            }
            try checkTrust(
                info, path: path, what: "The key file",
                forbidden: [.groupRead, .groupWrite, .groupExecute, .otherRead, .otherWrite, .otherExecute],
                fix: "chmod 600")
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be examined: \(error).")
        }
        return try parseKey(readAll(descriptor, limit: 256, path: path), path: path)
    }

    /// The key that `descriptor` holds (a pipe, say): 32 bytes or their base64.
    static func readKey(from descriptor: FileDescriptor, name: String) throws(StorageError) -> SymmetricKey {
        try parseKey(readAll(descriptor, limit: 256, path: name), path: name)
    }

    /// 32 bytes as they are, or base64 text (surrounding whitespace ignored) of 32 bytes.
    static func parseKey(_ bytes: [UInt8], path: String) throws(StorageError) -> SymmetricKey {
        if bytes.count == keyLength { return SymmetricKey(data: bytes) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let data = Data(base64Encoded: text), data.count == keyLength { return SymmetricKey(data: data) }
        throw StorageError(
            .invalidKeyFile, path: path,
            reason:
                "The key holds \(bytes.count) bytes; a Latchkey key is exactly \(keyLength) bytes, or their base64 on one line."
        )
    }

    private static func readAll(_ descriptor: FileDescriptor, limit: Int, path: String) throws(StorageError) -> [UInt8]
    {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        while bytes.count <= limit {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0) }
            } catch {
                throw StorageError(.fileNotAccessible, path: path, reason: "The key cannot be read: \(error).")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    /// How a new key file holds its key.
    enum KeyEncoding {
        /// 32 bytes.
        case raw
        /// Their base64 on one line.
        case base64
    }

    /// Writes `key` to a new file at `path`, mode 0600 from the start: first to a private
    /// temporary file created exclusively, then linked into place, so the key file either does
    /// not exist or is complete, and an existing one is never replaced.
    /// - Returns: whether this call created it (`false` when a file was already there).
    @discardableResult
    static func createKeyFile(at path: String, key: SymmetricKey, encoding: KeyEncoding) throws(StorageError) -> Bool {
        let temporary = "\(path).\(UUID().uuidString).tmp"
        try writePrivateFile(at: temporary, bytes: encoded(key, encoding))
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            let error = Errno(rawValue: errno)
            guard error == .fileExists else {
                throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be created: \(error).")
            }
            return false
        }
        return true
    }

    /// Replaces the key file at `path` with `key`, atomically (rename(2)), mode 0600 throughout.
    static func replaceKeyFile(at path: String, key: SymmetricKey, encoding: KeyEncoding) throws(StorageError) {
        let temporary = "\(path).\(UUID().uuidString).tmp"
        try writePrivateFile(at: temporary, bytes: encoded(key, encoding))
        guard rename(temporary, path) == 0 else {
            let error = Errno(rawValue: errno)
            unlink(temporary)
            throw StorageError(.fileNotAccessible, path: path, reason: "The key file cannot be replaced: \(error).")
        }
    }

    private static func encoded(_ key: SymmetricKey, _ encoding: KeyEncoding) -> [UInt8] {
        let raw = key.withUnsafeBytes { Array($0) }
        switch encoding {
        case .raw: return raw
        case .base64: return Array((Data(raw).base64EncodedString() + "\n").utf8)
        }
    }

    /// Creates `path` exclusively with mode 0600 (never widened, never chmod'ed afterwards),
    /// writes `bytes` and syncs them.
    static func writePrivateFile(at path: String, bytes: [UInt8]) throws(StorageError) {
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: .ownerReadWrite)
            do {
                _ = try descriptor.writeAll(bytes)
                guard fsync(descriptor.rawValue) == 0 else { throw Errno(rawValue: errno) }
                try descriptor.close()
            } catch {
                try? descriptor.close()
                unlink(path)
                throw error
            }
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "The file cannot be written: \(error).")
        }
    }

    private static func folderError(_ folder: String, _ problem: String) -> StorageError {
        StorageError(.folderNotAccessible, path: folder, reason: "The credential store's folder \(problem).")
    }
}
