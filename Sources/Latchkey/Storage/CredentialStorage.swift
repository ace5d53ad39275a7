public import Foundation

/// Where a ``CredentialStore`` keeps its credentials, which one is the default, and the lease
/// that makes every change to a credential one at a time however many processes share it.
///
/// Implementations must make every method atomic, also across processes when the storage is
/// shared (the SQLite storage is), and must never treat a read failure as "no credentials":
/// they throw ``StorageError`` instead. Every backend passes the same contract test suite.
public protocol CredentialStorage: Sendable {
    /// Every credential that can be read, oldest first. A damaged record is left out here and
    /// in ``credentials(matching:)``, kept as it is, and listed by ``damagedRecords()``.
    func all() async throws(StorageError) -> [StoredCredential]

    /// A summary of every credential that can be listed, oldest first, read without opening any
    /// sealed token: fast for a store of many accounts. A damaged record may show here; it is
    /// caught (``damagedRecords()``) when its tokens are read.
    func accounts() async throws(StorageError) -> [AccountSummary]

    /// The credential with this identifier, or `nil` when there is none. Throws
    /// ``StorageError/Code/corruptRecord`` when its record is damaged.
    func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential?

    /// The credentials matching an indexed query, oldest first.
    func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential]

    /// The credentials with these identifiers, in one read where the backend can, in the order
    /// of `ids`; an identifier with no credential is left out. Throws ``StorageError/Code/corruptRecord``
    /// when one of their records is damaged. The default reads them one by one.
    func credentials(ids: [CredentialID]) async throws(StorageError) -> [StoredCredential]

    /// Adds a credential; throws ``StorageError/Code/duplicateCredential`` when the identifier is taken.
    func insert(_ credential: StoredCredential) async throws(StorageError)

    /// Replaces a credential if the stored record still has `credential.version`, and stores it
    /// as version `credential.version + 1` (compare and swap).
    ///
    /// Throws ``StorageError/Code/versionConflict`` and changes nothing when the stored record
    /// has another version, and ``StorageError/Code/credentialNotFound`` when it is absent.
    func update(_ credential: StoredCredential) async throws(StorageError)

    /// Deletes a credential and, in the same atomic step, clears the default if it pointed to it.
    func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion

    /// The identifier of the default credential, if one is set.
    func defaultCredentialID() async throws(StorageError) -> CredentialID?

    /// Sets (or, with `nil`, clears) the default credential; never deletes anything.
    ///
    /// Throws ``StorageError/Code/credentialNotFound`` when `id` names no stored credential.
    func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError)

    /// Runs `body` while holding the lease of credential `id`, and hands it the access it reads
    /// and writes that credential through.
    ///
    /// While one holder runs its body, no other holder of the same storage runs a body for that
    /// credential: not another task, not another process sharing the database file, not another
    /// machine sharing the database. Every change to a credential happens there (see
    /// ``CredentialStore``): take the lease, read the credential once, change it, write it by
    /// compare-and-swap, release, so that many callers cause one refresh and a rotated refresh
    /// token is never sent twice.
    ///
    /// The lease keeps the meaning ``LeaseTerms`` gives it: a holder that is still working keeps
    /// it, a holder that died loses it (at once, or `terms.duration` after its last renewal), and
    /// a waiter can be cancelled. Waiting never blocks a thread and never polls faster than a
    /// provider could answer. Throws ``StorageError/Code/cancelled`` when the task is cancelled
    /// while waiting. The shipped contract suite (`LatchkeyStorageTesting`) checks each rule.
    func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result

    /// The records that cannot be read — damaged bytes, a seal that does not open, fields that
    /// do not match what was sealed — by id: credentials and the default marker. They stay as
    /// they are (nothing is wiped) and every other record keeps working; deleting a credential
    /// by its id removes it.
    func damagedRecords() async throws(StorageError) -> [DamagedRecord]
}

/// Where a ``CredentialStore`` keeps its revocation outbox: revocations that failed, sealed like
/// tokens, waiting to be tried again. Never a source of credentials.
///
/// Backends usually implement it beside ``CredentialStorage`` on the same database; the shipped
/// contract suite (`LatchkeyStorageTesting`) checks both.
public protocol OutboxStorage: Sendable {
    /// Adds an entry, in one atomic step with a check that the outbox holds fewer than `limit`
    /// entries; throws ``StorageError/Code/outboxFull`` otherwise. Writing an entry that is
    /// already there replaces it and is not growth.
    func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError)

    /// Every entry that can be read, the earliest due first (damaged ones are listed by
    /// ``damagedOutboxEntries()``).
    func outboxEntries() async throws(StorageError) -> [OutboxEntry]

    /// Claims up to `limit` entries for one drainer: those due by `date` (the earliest first),
    /// not failed permanently, not waiting for another entry (``OutboxEntry/waitsFor`` names one
    /// that is still there and has not failed permanently), and not claimed by another drainer
    /// (or only by one whose claim ran out before `now`). Each is claimed until `now + duration`, in one atomic step, so
    /// that drainers sharing the storage (tasks, processes, a fleet's instances) never send the
    /// same revocation at once; a drainer that dies loses its claims when they run out.
    ///
    /// A claim ends when the entry is updated (``updateOutboxEntry(_:)``) or removed.
    func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]

    /// Replaces an entry (after a failed attempt) and ends its claim; absent entries are ignored.
    func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError)

    /// Removes an entry (revoked, expired, or dropped on purpose; a damaged one too).
    func removeOutboxEntry(_ id: UUID) async throws(StorageError)

    /// The entries that cannot be read, by id; they stay as they are.
    func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord]
}

/// What a deletion did.
public struct StorageDeletion: Sendable, Hashable {
    /// Whether a credential was deleted (`false` when there was none with that identifier).
    public var deleted: Bool
    /// Whether the deleted credential was the default, which is now cleared.
    public var clearedDefault: Bool

    /// Creates a deletion report.
    public init(deleted: Bool, clearedDefault: Bool) {
        self.deleted = deleted
        self.clearedDefault = clearedDefault
    }
}

extension CredentialStorage {
    /// Reads the credentials one by one, in the order of `ids`.
    public func credentials(ids: [CredentialID]) async throws(StorageError) -> [StoredCredential] {
        var found: [StoredCredential] = []
        for id in ids {
            if let credential = try await credential(for: id) { found.append(credential) }
        }
        return found
    }
}

extension [StoredCredential] {
    /// These credentials in the order of `ids` (a backend's one read returns them in its own).
    package func inOrder(of ids: [CredentialID]) -> [StoredCredential] {
        var position: [CredentialID: Int] = [:]
        for (index, id) in ids.enumerated() where position[id] == nil { position[id] = index }
        return sorted { (position[$0.id] ?? .max) < (position[$1.id] ?? .max) }
    }
}
