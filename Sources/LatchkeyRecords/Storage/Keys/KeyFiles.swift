package import Crypto
package import SystemPackage

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files that hold a store's secrets, and what Latchkey trusts about them, like ssh's
/// StrictModes: each must belong to the user and be closed to other users' writes (a key file
/// to their reads too), and files are opened without following symbolic links. Every refusal
/// names the file and says how to fix it; nothing here changes a file that exists. The SQLite
/// store's files and the key of any store are checked here.
package enum KeyFiles {
    package static let keyLength = 32

    /// The user the store belongs to.
    package static var user: UserID { UserID(rawValue: geteuid()) }

    /// What a path is, or `nil` when nothing is there.
    package static func status(_ path: String, followingLinks: Bool) throws(StorageError) -> Stat? {
        do {
            return try FilePath(path).stat(followTargetSymlink: followingLinks)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StorageError(.fileNotAccessible, path: path, reason: "The store's file cannot be examined: \(error).")
        }
    }

    /// Checks the owner and the permission bits `forbidden` to group and others.
    package static func checkTrust(
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

    /// The key in the file at `path` — 32 bytes, or their base64 on one line — or `nil` when
    /// there is no such file. The file must be a regular file (not a link) of the user's that
    /// no other user can read or write.
    package static func readKeyFile(at path: String) throws(StorageError) -> SymmetricKey? {
        guard
            let bytes = try readTrustedFile(
                at: path, what: "The key file", forbidden: closedToOthers, fix: "chmod 600", limit: 256)
        else { return nil }
        return try parseKey(bytes, path: path)
    }

    /// Every permission of group and others: what a file of secrets must not grant.
    package static let closedToOthers: FilePermissions = [
        .groupRead, .groupWrite, .groupExecute, .otherRead, .otherWrite, .otherExecute,
    ]

    /// What the file at `path` holds (at most `limit` bytes and one more, so that the caller
    /// can tell a file that is too large), or `nil` when there is no such file. Read only when
    /// it is trusted: a regular file, opened without following a symbolic link, of the user's,
    /// granting none of `forbidden`; a refusal names `what` and says how to `fix` it.
    package static func readTrustedFile(
        at path: String, what: String, forbidden: FilePermissions, fix: String, limit: Int
    ) throws(StorageError) -> [UInt8]? {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
        } catch let error as Errno {
            switch error {
            case .noSuchFileOrDirectory: return nil
            case .tooManySymbolicLinkLevels:
                throw StorageError(
                    .insecureFile, path: path,
                    reason: "\(what) is a symbolic link; Latchkey reads only a file of its own there.")
            default:
                throw StorageError(.fileNotAccessible, path: path, reason: "\(what) cannot be read: \(error).")
            }
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "\(what) cannot be read.")
        }
        defer { try? descriptor.close() }
        do {
            let info = try descriptor.stat()
            guard info.type == .regular else {
                throw StorageError(
                    .insecureFile, path: path,
                    reason: "\(what) is not a regular file; Latchkey reads only a file of its own there.")
            }
            try checkTrust(info, path: path, what: what, forbidden: forbidden, fix: fix)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.fileNotAccessible, path: path, reason: "\(what) cannot be examined: \(error).")
        }
        return try readAll(descriptor, limit: limit, path: path)
    }

    /// The key that `descriptor` holds (a pipe, say): 32 bytes or their base64.
    package static func readKey(from descriptor: FileDescriptor, name: String) throws(StorageError) -> SymmetricKey {
        try parseKey(readAll(descriptor, limit: 256, path: name), path: name)
    }

    /// 32 bytes as they are, or base64 text (surrounding whitespace ignored) of 32 bytes.
    package static func parseKey(_ bytes: [UInt8], path: String) throws(StorageError) -> SymmetricKey {
        if bytes.count == keyLength { return SymmetricKey(data: bytes) }
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        if let data = Data(base64Encoded: String(text)), data.count == keyLength { return SymmetricKey(data: data) }
        throw StorageError(
            .invalidKeyFile, path: path,
            reason:
                "The key holds \(bytes.count) bytes; a Latchkey key is exactly \(keyLength) bytes, or their base64 on one line."
        )
    }

    private static func readAll(_ descriptor: FileDescriptor, limit: Int, path: String) throws(StorageError) -> [UInt8]
    {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: min(limit + 1, 65_536))
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
    package enum KeyEncoding {
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
    package static func createKeyFile(at path: String, key: SymmetricKey, encoding: KeyEncoding) throws(StorageError)
        -> Bool
    {
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

    /// Writes `key` to a new file at `path` directly — created exclusively, mode 0600, synced —
    /// with no temporary file: for a file nobody reads before it is complete (a key rotation's
    /// `KEY.next`, read only once the rotation has committed), so that a process killed while
    /// writing it leaves nothing behind but that file, which the next rotation replaces.
    package static func writeNewKeyFile(at path: String, key: SymmetricKey, encoding: KeyEncoding) throws(StorageError)
    {
        try writePrivateFile(at: path, bytes: encoded(key, encoding))
    }

    /// Replaces the key file at `path` with `key`, atomically (rename(2)), mode 0600 throughout.
    package static func replaceKeyFile(at path: String, key: SymmetricKey, encoding: KeyEncoding) throws(StorageError) {
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
    package static func writePrivateFile(at path: String, bytes: [UInt8]) throws(StorageError) {
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

}
