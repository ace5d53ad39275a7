/// A failure of credential storage. It names the file involved and what to do, never a secret.
///
/// Latchkey reports a damaged store instead of wiping it: none of these errors deletes,
/// truncates or overwrites anything.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to switch over with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case corruptDatabase, wrongKey, invalidKeyFile, missingKeyFile, folderNotAccessible,
                fileNotAccessible, unsupportedSchema, corruptRecord, credentialNotFound,
                duplicateCredential, databaseFailure, versionConflict, cancelled, outboxFull, insecureFile, busy,
                unreachable, reservedTag, unsupported, leaseNotHeld
        }

        private let base: Base

        /// The database file is not a SQLite database, or its pages are damaged.
        public static let corruptDatabase = Code(base: .corruptDatabase)
        /// The key cannot open the database's sealed data: it is not the key the store was made with.
        public static let wrongKey = Code(base: .wrongKey)
        /// The key file is not exactly 32 bytes.
        public static let invalidKeyFile = Code(base: .invalidKeyFile)
        /// The database exists but the key file beside it does not.
        public static let missingKeyFile = Code(base: .missingKeyFile)
        /// The store's folder cannot be created, read or written, or is not a folder.
        public static let folderNotAccessible = Code(base: .folderNotAccessible)
        /// A file of the store cannot be read or written.
        public static let fileNotAccessible = Code(base: .fileNotAccessible)
        /// The database was written by a newer version of Latchkey.
        public static let unsupportedSchema = Code(base: .unsupportedSchema)
        /// One stored record cannot be decoded or opened.
        public static let corruptRecord = Code(base: .corruptRecord)
        /// No credential has the given identifier.
        public static let credentialNotFound = Code(base: .credentialNotFound)
        /// A credential with the same identifier is already stored.
        public static let duplicateCredential = Code(base: .duplicateCredential)
        /// The database reported another failure (busy for too long, disk full, I/O error).
        public static let databaseFailure = Code(base: .databaseFailure)
        /// The credential changed since it was read: the write was refused and changed nothing.
        /// Read it again and retry.
        public static let versionConflict = Code(base: .versionConflict)
        /// The task was cancelled while it waited (for a refresh lease, say); nothing changed.
        public static let cancelled = Code(base: .cancelled)
        /// A file or folder of the store is not the user's, is open to other users, is a link, or
        /// is a key file that existed before its database: it is not trusted, and not changed.
        public static let insecureFile = Code(base: .insecureFile)
        /// Another process holds the store for now (it is creating it, or holds a lock SQLite will
        /// not wait for); trying again shortly will do.
        public static let busy = Code(base: .busy)
        /// The revocation outbox holds as many entries as it may; nothing was added.
        public static let outboxFull = Code(base: .outboxFull)
        /// The database server cannot be reached: the connection was refused, lost or timed out.
        /// Nothing was written; trying again later will do.
        public static let unreachable = Code(base: .unreachable)
        /// A tag key starts with `latchkey.`, the prefix Latchkey keeps for itself; nothing changed.
        public static let reservedTag = Code(base: .reservedTag)
        /// The storage does not implement what was asked of it (web sessions, say); nothing changed.
        public static let unsupported = Code(base: .unsupported)
        /// The access was used outside the lease or claim it was handed for (after its body
        /// returned), or for another credential than its own; nothing changed.
        public static let leaseNotHeld = Code(base: .leaseNotHeld)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// The file or folder involved, when there is one.
    public let path: String?
    /// A safe, human-readable explanation (no secrets).
    public let reason: String
    /// The error that caused this one, if any.
    public let underlying: (any Error & Sendable)?
    /// Whether the same operation may succeed if tried again later: a busy or full database, an
    /// I/O error, a write that lost a race. A damaged store, a wrong key or a missing file stay
    /// as they are until someone fixes them, so they are never retryable.
    public let isRetryable: Bool

    /// Creates a storage error.
    ///
    /// - Parameter retryable: whether a retry can help; by default only
    ///   ``Code/versionConflict``, ``Code/busy`` and ``Code/unreachable`` are.
    public init(
        _ code: Code, path: String? = nil, reason: String, underlying: (any Error & Sendable)? = nil,
        retryable: Bool? = nil
    ) {
        self.code = code
        self.path = path
        self.reason = reason
        self.underlying = underlying
        self.isRetryable = retryable ?? (code == .versionConflict || code == .busy || code == .unreachable)
    }

    public var description: String {
        guard let path else { return reason }
        return "\(reason) (\(path))"
    }

    /// The error a backend reports when an identifier is missing.
    package static func credentialNotFound(_ id: CredentialID) -> StorageError {
        StorageError(.credentialNotFound, reason: "No stored credential has the id \(id).")
    }

    /// The error a backend reports when an update names a version that is no longer stored.
    package static func versionConflict(_ id: CredentialID) -> StorageError {
        StorageError(
            .versionConflict, reason: "The credential \(id) changed since it was read; the write was refused.")
    }

    /// The error a backend reports when a task is cancelled while it waits for a lease.
    package static func cancelledWaitingForLease(_ id: CredentialID) -> StorageError {
        StorageError(.cancelled, reason: "Cancelled while waiting for the lease of \(id); nothing changed.")
    }

    /// The error an access reports when it is used after its lease or claim ended, or for
    /// another credential than the one it was handed for.
    package static func leaseNotHeld(_ what: String) -> StorageError {
        StorageError(
            .leaseNotHeld, reason: "\(what) is not held by this access (it ended, or is another's); nothing changed.")
    }

    /// The error a fenced write reports when the lease `name` was taken over by another holder
    /// (this one stalled past its term).
    package static func leaseTakenOver(_ name: String) -> StorageError {
        leaseNotHeld("the lease of \(name), taken over after its holder stalled past its term,")
    }

    /// The error a claim's settle reports when `entries` of its entries were taken over by
    /// another drainer (this one stalled past its term): their outcomes were not written.
    package static func lostOutboxClaim(entries: Int) -> StorageError {
        leaseNotHeld(
            "the claim of \(entries) outbox \(entries == 1 ? "entry" : "entries"), taken over after its holder stalled past its term,"
        )
    }

    /// The error a backend reports when the outbox is at its bound.
    package static func outboxFull(limit: Int) -> StorageError {
        StorageError(
            .outboxFull,
            reason:
                "The revocation outbox already holds \(limit) entries, its bound; nothing was added. Retry or drop entries (latchkey outbox)."
        )
    }

    /// The error a backend reports when an identifier is taken.
    package static func duplicateCredential(_ id: CredentialID) -> StorageError {
        StorageError(.duplicateCredential, reason: "A credential with the id \(id) is already stored.")
    }
}
