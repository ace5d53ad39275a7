public import Foundation
import NIOConcurrencyHelpers

/// The terms of a credential's lease: how long its holder may hold it, and the time it goes by.
///
/// A lease has one meaning on every backend:
/// - `duration` is the longest a holder may hold it. The store bounds the holder's work by it
///   (see ``CredentialStore/leaseDuration``): every request the holder sends must be answered,
///   body included, before the lease's deadline.
/// - A holder that is still working keeps the lease, however long it takes: the backend ties
///   the lease to the holder (its task, its process, its database connection) or renews it
///   while the holder runs. It is never handed to another holder meanwhile.
/// - A holder that died (its process was killed, its connection dropped) loses the lease: at
///   once where the backend can tell, otherwise once `duration` has passed without a renewal.
/// - A task waiting for the lease can be cancelled; it then throws
///   ``StorageError/Code/cancelled`` and holds nothing.
public struct LeaseTerms: Sendable {
    /// The longest a holder may hold the lease, and how long a dead holder's lease outlives it
    /// at most.
    public var duration: Duration
    /// The time the lease goes by (the store's clock): a backend that records an expiry uses
    /// its date, so that tests move time instead of waiting.
    public var clock: any LatchkeyClock

    /// Creates terms.
    public init(duration: Duration, clock: any LatchkeyClock = SystemClock()) {
        self.duration = duration
        self.clock = clock
    }

    /// The duration in seconds.
    public var seconds: TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// What the holder of a credential's lease reads and writes that credential through: that one
/// credential, while the holder's body runs. Used after the body returned, or for another
/// credential, every method throws ``StorageError/Code/leaseNotHeld`` and changes nothing (a
/// backend keeps a ``LeaseScope`` for that).
///
/// Most backends read and write the storage itself. A backend whose lease lives on a resource
/// of its own works through that resource: the PostgreSQL storage's holder reads and writes on
/// the connection that holds the lease, so that holders never wait for a second connection of a
/// pool they are all holding (see ``CredentialStorage/withCredentialLease(for:terms:_:)``).
public protocol LeasedCredentialAccess: Sendable {
    /// The credential whose lease this is.
    var id: CredentialID { get }

    /// The credential, or `nil` when there is none. Throws ``StorageError/Code/corruptRecord``
    /// when its record is damaged.
    func credential() async throws(StorageError) -> StoredCredential?

    /// Replaces the credential if the stored record still has `credential.version`
    /// (compare-and-swap), as ``CredentialStorage/update(_:)`` does.
    func update(_ credential: StoredCredential) async throws(StorageError)

    /// Deletes the credential and clears the default if it pointed to it, as
    /// ``CredentialStorage/delete(_:)`` does.
    func delete() async throws(StorageError) -> StorageDeletion

    /// Deletes the credential only if the stored record still has `version` (a compare-and-swap
    /// delete), clearing the default as ``delete()`` does; `nil` when the record changed, and
    /// nothing was deleted.
    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion?

    /// Adds outbox entries in one write, as ``OutboxStorage/enqueue(_:limit:)`` does, when this
    /// access also reaches the store's outbox; `false` when it does not (the store then queues
    /// through its outbox storage).
    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool
}

extension LeasedCredentialAccess {
    /// By default an access does not reach the outbox.
    public func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool { false }
}

/// Whether the body a lease or claim was handed to is still running, for the access a backend
/// hands it: the access checks it before every read and write, and the backend ends it when the
/// body returns, so that an access kept past its body refuses to work.
public final class LeaseScope: Sendable {
    /// What the scope covers, for its errors ("the lease of …").
    public let name: String
    private let open = NIOLockedValueBox(true)

    /// A scope that is open until ``end()``.
    public init(_ name: String) {
        self.name = name
    }

    /// The scope of the lease of credential `id`.
    public convenience init(lease id: CredentialID) {
        self.init("the lease of \(id)")
    }

    /// Ends the scope: every later ``check()`` throws.
    public func end() {
        open.withLockedValue { $0 = false }
    }

    /// Throws ``StorageError/Code/leaseNotHeld`` once the scope has ended.
    public func check() throws(StorageError) {
        guard open.withLockedValue({ $0 }) else { throw .leaseNotHeld(name) }
    }

    /// Throws ``StorageError/Code/leaseNotHeld`` once the scope has ended, or when `credential`
    /// is not `id`'s.
    public func check(_ id: CredentialID, is other: CredentialID) throws(StorageError) {
        try check()
        guard other == id else { throw .leaseNotHeld("the lease of \(other)") }
    }
}

/// The access a backend whose lease needs nothing of its own hands its holder: the storage
/// itself, scoped to the lease's credential and body (``LeaseScope``). The in-memory and SQLite
/// storages hand it; end its ``scope`` when the body returns.
public struct StorageLeaseAccess: LeasedCredentialAccess {
    /// The credential whose lease this is.
    public let id: CredentialID
    /// Ended by the backend when the body returns.
    public let scope: LeaseScope
    private let storage: any CredentialStorage & OutboxStorage

    /// The access to `id` in `storage`, for one lease.
    public init(_ id: CredentialID, in storage: any CredentialStorage & OutboxStorage) {
        self.id = id
        self.storage = storage
        self.scope = LeaseScope(lease: id)
    }

    public func credential() async throws(StorageError) -> StoredCredential? {
        try scope.check()
        return try await storage.credential(for: id)
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        try scope.check(id, is: credential.id)
        try await storage.update(credential)
    }

    public func delete() async throws(StorageError) -> StorageDeletion {
        try scope.check()
        return try await storage.delete(id)
    }

    public func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try scope.check()
        return try await storage.delete(id, ifVersion: version)
    }

    /// The holder reaches the outbox: the same storage.
    public func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        try scope.check()
        try await storage.enqueue(entries, limit: limit)
        return true
    }
}

/// The entries a backend's claim hands its drainer, scoped to the claim's body: what it
/// claimed and opened, what it found damaged, the backlog, and how it writes outcomes. Every
/// backend hands it; end its ``scope`` when the body returns.
public struct OutboxClaimAccess: ClaimedOutboxEntries {
    /// The claimed entries, opened once, the earliest due first.
    public let entries: [OutboxEntry]
    /// Claimed entries whose record cannot be read.
    public let damaged: [DamagedRecord]
    /// What the outbox held when the claim was made.
    public let backlog: OutboxBacklog
    /// Ended by the backend when the body returns.
    public let scope = LeaseScope("a claim of the outbox")
    private let write: @Sendable ([UUID], [OutboxEntry]) async throws(StorageError) -> Void

    /// A claim of `entries` whose outcomes `write` records (the claim's own entries only).
    public init(
        entries: [OutboxEntry], damaged: [DamagedRecord], backlog: OutboxBacklog,
        settle write: @escaping @Sendable ([UUID], [OutboxEntry]) async throws(StorageError) -> Void
    ) {
        self.entries = entries
        self.damaged = damaged
        self.backlog = backlog
        self.write = write
    }

    public func settle(removing removed: [UUID], updating updated: [OutboxEntry]) async throws(StorageError) {
        try scope.check()
        try await write(removed, updated)
    }
}
