package import LatchkeyRecords
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What Latchkey trusts about the files of a SQLite store that exist: like ssh's StrictModes,
/// each must belong to the user and be closed to other users' writes, and the database is
/// never a symbolic link. Every reader of a store checks them the same way (the store itself,
/// and the tool's quick reads); every refusal names the file and says how to fix it, and
/// nothing here changes a file.
package enum SQLiteStoreFiles {
    /// Checks the store's folder when it exists: a folder of the user's, closed to other users'
    /// writes, that its owner can use. Returns whether it exists.
    package static func checkFolder(_ folder: String) throws(StorageError) -> Bool {
        guard let info = try KeyFiles.status(folder, followingLinks: true) else { return false }
        guard info.type == .directory else { throw folderError(folder, "is not a folder") }
        try KeyFiles.checkTrust(
            info, path: folder, what: "The credential store's folder", forbidden: [.groupWrite, .otherWrite],
            fix: "chmod go-w")
        // Checked on the mode bits as well as with access(2), so that a folder its owner locked
        // is reported even to root, which access(2) lets through.
        guard info.permissions.contains(.ownerReadWriteExecute), access(folder, R_OK | W_OK | X_OK) == 0 else {
            throw folderError(folder, "cannot be read and written by its owner")
        }
        return true
    }

    /// What is at the database's path.
    package struct DatabaseFile: Sendable {
        /// Its path.
        package var path: String
        /// Whether a file is there.
        package var exists: Bool
        /// Whether it holds data (a store that was created and written).
        package var hasData: Bool
    }

    /// Checks an existing database file: a regular file (not a link) of the user's, closed to
    /// other users' writes, that its owner can read and write.
    package static func checkDatabaseFile(_ path: String) throws(StorageError) -> DatabaseFile {
        guard let info = try KeyFiles.status(path, followingLinks: false) else {
            return DatabaseFile(path: path, exists: false, hasData: false)
        }
        guard info.type != .symbolicLink else {
            throw StorageError(
                .insecureFile, path: path,
                reason: "The credential database is a symbolic link; Latchkey opens only a file of its own there.")
        }
        guard info.type == .regular else {
            throw StorageError(.fileNotAccessible, path: path, reason: "The credential database is not a regular file.")
        }
        try KeyFiles.checkTrust(
            info, path: path, what: "The credential database", forbidden: [.groupWrite, .otherWrite],
            fix: "chmod go-w")
        guard info.permissions.contains(.ownerReadWrite), access(path, R_OK | W_OK) == 0 else {
            throw StorageError(
                .fileNotAccessible, path: path,
                reason: "The credential database cannot be read and written by its owner.")
        }
        return DatabaseFile(path: path, exists: true, hasData: info.size > 0)
    }

    package static func folderError(_ folder: String, _ problem: String) -> StorageError {
        StorageError(.folderNotAccessible, path: folder, reason: "The credential store's folder \(problem).")
    }
}
