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

    /// The access token of credential `id`, when it can be handed out at `date` as it is
    /// (``StoredCredential``'s rule: valid for `minimumValidity`, or half its lifetime when it
    /// lives shorter, and not rejected); `nil` when it cannot, or there is no such credential:
    /// the caller then reads the credential. `accessToken()`'s hot path: by default read through
    /// ``credential(for:)``; a backend that keeps credentials in memory answers without copying
    /// one out.
    func validAccessToken(for id: CredentialID, minimumValidity: TimeInterval, at date: Date) async throws(StorageError)
        -> String?

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

    /// Deletes a credential only if the stored record still has `version` (a compare-and-swap
    /// delete), clearing the default as ``delete(_:)`` does; `nil` when the record changed, and
    /// nothing was deleted. By default a read and a delete, which is one step only under the
    /// credential's lease (where the store calls it); the shipped backends delete in one statement.
    func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion?

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

    /// What this storage keeps beside credentials and the outbox — DPoP nonces, provider
    /// documents, a feed of other stores' changes, web sessions — which the store shares with
    /// every process and instance on this storage. By default nothing; the contract suite checks
    /// every part a storage declares.
    var capabilities: StorageCapabilities { get }
}

/// Where a ``CredentialStore`` keeps its revocation outbox: server steps that failed, sealed like
/// tokens, waiting to be sent again. Never a source of credentials.
///
/// Backends usually implement it beside ``CredentialStorage`` on the same database; the shipped
/// contract suite (`LatchkeyStorageTesting`) checks both, the claim's rules as the lease's.
public protocol OutboxStorage: Sendable {
    /// Adds `entries` in one atomic step, with a check that the outbox then holds at most
    /// `limit` entries; throws ``StorageError/Code/outboxFull`` and adds none otherwise. Writing
    /// an entry that is already there replaces it and is not growth.
    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError)

    /// Every entry that can be read, the earliest due first (damaged ones are listed by
    /// ``damagedOutboxEntries()``).
    func outboxEntries() async throws(StorageError) -> [OutboxEntry]

    /// Claims entries for one drainer and runs `body` with them, then ends the claim.
    ///
    /// What is claimed, in one atomic step, at most `request.limit` entries, the earliest due
    /// first: those due by `request.dueBy`, not failed permanently, not waiting for another
    /// (``OutboxEntry/waitsFor`` names one that is still there and has not failed permanently);
    /// and every entry whose token has expired by the claim's clock (``OutboxEntry/tokenExpiresAt``),
    /// to be dropped. Never an entry another drainer's claim holds.
    ///
    /// A claim keeps the meaning ``LeaseTerms`` gives a lease: the body's requests must be
    /// answered within `terms.duration` (the store bounds them so); a drainer that is still
    /// working keeps its claim however long it takes (the backend ties it to the drainer or
    /// renews it while the body runs); a drainer that died loses it (at once where the backend
    /// can tell, otherwise `terms.duration` after its last renewal); writes through the access
    /// keep it; it ends when the body returns, and only then. Only the claimed entries are
    /// opened, once each. The access refuses to work once the body returned.
    func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result

    /// Makes the entries that failed permanently due again at `date`, opening none: those whose
    /// ``OutboxEntry/failureCause`` is `cause` (any, when `nil`) and whose provider is one of
    /// `providers` (any, when `nil`). Returns how many.
    func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    )
        async throws(StorageError) -> Int

    /// Removes an entry (dropped on purpose; a damaged one too); whether there was one.
    @discardableResult
    func removeOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool

    /// The entries that cannot be read, by id; they stay as they are.
    func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord]
}

/// Which outbox entries a drainer claims (``OutboxStorage/withOutboxClaim(_:terms:_:)``).
public struct OutboxClaimRequest: Sendable, Hashable {
    /// Entries due by this date (`.distantFuture`: every entry that may be sent).
    public var dueBy: Date
    /// At most this many.
    public var limit: Int

    /// A request.
    public init(dueBy: Date, limit: Int) {
        self.dueBy = dueBy
        self.limit = max(0, limit)
    }
}

/// The entries a drainer claimed, and what it writes of them while its claim holds.
public protocol ClaimedOutboxEntries: Sendable {
    /// The claimed entries, opened once, the earliest due first.
    var entries: [OutboxEntry] { get }
    /// Claimed entries whose record cannot be read; they stay as they are.
    var damaged: [DamagedRecord] { get }
    /// What the outbox held when the claim was made, counted without opening anything.
    var backlog: OutboxBacklog { get }

    /// Removes the entries `removed` (sent, or expired) and replaces `updated` (a failed
    /// attempt, a rotated refresh token sealed into a grant), claimed entries only, in one
    /// atomic step. The claim goes on until the body returns.
    func settle(removing removed: [UUID], updating updated: [OutboxEntry]) async throws(StorageError)
}

/// What the outbox holds when a claim is made, by the state of each entry at the claim's time,
/// counted without opening any entry (the claimed entries count as what they are).
public struct OutboxBacklog: Sendable, Hashable {
    /// Every entry, damaged ones included.
    public var total: Int
    /// Entries not due yet, and none of the below.
    public var notDue: Int
    /// Entries waiting for another entry to go through first (and not failed permanently).
    public var waiting: Int
    /// Entries that failed in a way a retry cannot fix (and are not claimed elsewhere).
    public var failedPermanently: Int
    /// Entries another drainer's claim holds.
    public var claimedElsewhere: Int
    /// When the oldest entry was first attempted.
    public var oldestCreatedAt: Date?

    /// A backlog.
    public init(
        total: Int = 0, notDue: Int = 0, waiting: Int = 0, failedPermanently: Int = 0, claimedElsewhere: Int = 0,
        oldestCreatedAt: Date? = nil
    ) {
        self.total = total
        self.notDue = notDue
        self.waiting = waiting
        self.failedPermanently = failedPermanently
        self.claimedElsewhere = claimedElsewhere
        self.oldestCreatedAt = oldestCreatedAt
    }
}

/// What a deletion did.
public struct StorageDeletion: Sendable, Hashable {
    /// Nothing was deleted: there was no credential with that identifier.
    public static let notFound = StorageDeletion(deleted: false, clearedDefault: false)
    /// A credential that was not the default was deleted.
    public static let deletedCredential = StorageDeletion(deleted: true, clearedDefault: false)
    /// The default credential was deleted, and the default is now cleared.
    public static let deletedDefault = StorageDeletion(deleted: true, clearedDefault: true)

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
    public func validAccessToken(for id: CredentialID, minimumValidity: TimeInterval, at date: Date)
        async throws(StorageError) -> String?
    {
        try await credential(for: id)?.accessToken(minimumValidity: minimumValidity, at: date)
    }

    public func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        guard let stored = try await credential(for: id) else {
            return .notFound
        }
        guard stored.version == version else { return nil }
        return try await delete(id)
    }

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
