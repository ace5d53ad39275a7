import Crypto
import Foundation
import Latchkey
import LatchkeySQLiteReader
import SystemPackage

// `stat`'s `timespec` is CoreFoundation's as far as the compiler's member lookup goes on Linux,
// depending on how the module's files are batched: imported here, it is found either way.
#if canImport(CoreFoundation)
    import CoreFoundation
#endif

/// The files of a SQLite store — the folder, the database, the key file — and what Latchkey
/// trusts about them. Like ssh's StrictModes: each must belong to the user and be closed to
/// other users' writes (the key file to their reads too), files are opened without following
/// symbolic links, and a key file that existed before its database is never adopted. Every
/// refusal names the file and says how to fix it; nothing here changes a file that exists.
enum StoreFiles {
    /// Creates the folder (0700) when it is missing; otherwise checks that it is a folder of the
    /// user's, closed to other users' writes, that its owner can use.
    static func prepareFolder(_ folder: String) throws(StorageError) {
        guard try !SQLiteStoreFiles.checkFolder(folder) else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SQLiteStoreFiles.folderError(folder, "cannot be created")
        }
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
        if let info = try? KeyFiles.status(path, followingLinks: false), info.size == 0 { unlink(path) }
    }

    /// The store's key from its key file, or a new one when there is none and the database is new.
    ///
    /// - Parameters:
    ///   - database: what was at the database's path before this open.
    ///   - createdDatabase: whether this open created the database file.
    ///   - besideDatabase: whether the key file is the one Latchkey names after the database (a
    ///     key file the caller names on purpose may exist before its database).
    static func loadOrCreateKey(
        at path: String, database: SQLiteStoreFiles.DatabaseFile, createdDatabase: Bool, besideDatabase: Bool
    ) throws(StorageError) -> SymmetricKey {
        if let key = try KeyFiles.readKeyFile(at: path) {
            // A key file beside a database that did not exist is someone else's, or a leftover:
            // adopting it would seal the new tokens with a key another may know.
            guard !(besideDatabase && createdDatabase) else {
                throw StorageError(
                    .insecureFile, path: path,
                    reason:
                        "A key file exists for a credential database that did not; Latchkey never adopts one. If it is a leftover of yours, remove it."
                )
            }
            if besideDatabase && !database.hasData { try checkEmptyDatabase(database, besideKey: path) }
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
        try KeyFiles.createKeyFile(at: path, key: SymmetricKey(size: .bits256), encoding: .raw)
        guard let key = try KeyFiles.readKeyFile(at: path) else {
            throw StorageError(
                .fileNotAccessible, path: path, reason: "The key file disappeared right after it was created.")
        }
        return key
    }

    /// How long a store's creator may take from writing the key file to writing the database.
    static let creationWindow: TimeInterval = 10

    /// An empty database beside its key file: for a moment while another Latchkey creates the
    /// store (``StorageError/Code/busy``: opening tries again), otherwise a store that was emptied
    /// or whose creation was cut short. That is damage: reported, and nothing is written over it.
    private static func checkEmptyDatabase(_ database: SQLiteStoreFiles.DatabaseFile, besideKey keyPath: String)
        throws(StorageError)
    {
        let written = try KeyFiles.status(keyPath, followingLinks: false).map {
            Date(timeIntervalSince1970: TimeInterval($0.st_mtim.tv_sec))
        }
        if let written, Date().timeIntervalSince(written) < creationWindow {
            throw StorageError(
                .busy, path: database.path,
                reason: "The credential database is empty beside its key file: another Latchkey is creating it.")
        }
        throw StorageError(
            .corruptDatabase, path: database.path,
            reason:
                "The credential database is empty, yet its key file exists: the store was emptied, or its creation was cut short. Latchkey changes nothing. If it never held an account, remove both files; otherwise restore the database from a backup."
        )
    }

}
