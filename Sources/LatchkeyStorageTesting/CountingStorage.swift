public import Foundation
public import Latchkey
import NIOConcurrencyHelpers

/// How often a store used its storage: what a test or a benchmark asks of one operation
/// ("a sign-out takes each credential's lease once and opens it once").
public struct StorageCounts: Sendable, Hashable, CustomStringConvertible {
    /// Reads of sealed credentials (a lookup by id, a listing of every credential, a query).
    public var reads = 0
    /// Credentials opened (their seal opened) by those reads.
    public var opens = 0
    /// Listings that open no seal (``CredentialStorage/accounts()``) and default-marker reads.
    public var listings = 0
    /// Writes: inserts, compare-and-swap updates, deletions, the default, outbox changes.
    public var writes = 0
    /// Leases taken.
    public var leases = 0
    /// Outbox claims made.
    public var claims = 0

    /// No use yet.
    public init() {}

    public var description: String {
        "reads \(reads), opens \(opens), listings \(listings), writes \(writes), leases \(leases), claims \(claims)"
    }
}

/// A storage that counts how its store uses the storage it wraps, the lease holder's access
/// included. For tests and the benchmark: wrap a backend, run an operation, read ``counts``.
public final class CountingStorage: CredentialStorage, OutboxStorage, Sendable {
    /// The storage that does the work.
    public let inner: any CredentialStorage & OutboxStorage
    private let tally = NIOLockedValueBox(StorageCounts())

    /// Wraps `inner`.
    public init(_ inner: any CredentialStorage & OutboxStorage) {
        self.inner = inner
    }

    /// The counts so far.
    public var counts: StorageCounts { tally.withLockedValue { $0 } }

    /// What the wrapped storage keeps beside credentials, as it declares it.
    public var capabilities: StorageCapabilities { inner.capabilities }

    /// Starts counting again from zero.
    public func reset() { tally.withLockedValue { $0 = StorageCounts() } }

    func count(_ change: (inout StorageCounts) -> Void) { tally.withLockedValue { change(&$0) } }

    func opened(_ credentials: [StoredCredential]) -> [StoredCredential] {
        count {
            $0.reads += 1
            $0.opens += credentials.count
        }
        return credentials
    }

    public func all() async throws(StorageError) -> [StoredCredential] { opened(try await inner.all()) }

    public func accounts() async throws(StorageError) -> [AccountSummary] {
        count { $0.listings += 1 }
        return try await inner.accounts()
    }

    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        opened(try await inner.credential(for: id).map { [$0] } ?? []).first
    }

    public func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        opened(try await inner.credentials(matching: query))
    }

    public func credentials(ids: [CredentialID]) async throws(StorageError) -> [StoredCredential] {
        opened(try await inner.credentials(ids: ids))
    }

    public func insert(_ credential: StoredCredential) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.insert(credential)
    }

    public func update(_ credential: StoredCredential) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.update(credential)
    }

    public func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        count { $0.writes += 1 }
        return try await inner.delete(id)
    }

    public func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        count { $0.writes += 1 }
        return try await inner.delete(id, ifVersion: version)
    }

    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        count { $0.listings += 1 }
        return try await inner.defaultCredentialID()
    }

    public func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.setDefaultCredentialID(id)
    }

    public func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        count { $0.leases += 1 }
        return try await inner.withCredentialLease(for: id, terms: terms) { access in
            await body(CountingAccess(storage: self, inner: access))
        }
    }

    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] { try await inner.damagedRecords() }

    public func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.enqueue(entries, limit: limit)
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] {
        let entries = try await inner.outboxEntries()
        count {
            $0.reads += 1
            $0.opens += entries.count
        }
        return entries
    }

    /// A claim is one write that opens what it claims; its settles are writes.
    public func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result {
        try await inner.withOutboxClaim(request, terms: terms) { claim in
            self.count {
                $0.claims += 1
                $0.writes += 1
                $0.opens += claim.entries.count + claim.damaged.count
            }
            return await body(CountingClaim(storage: self, inner: claim))
        }
    }

    public func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    ) async throws(StorageError) -> Int {
        count { $0.writes += 1 }
        return try await inner.reviveOutboxEntries(failedFor: cause, of: providers, at: date)
    }

    @discardableResult
    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool {
        count { $0.writes += 1 }
        return try await inner.removeOutboxEntry(id)
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await inner.damagedOutboxEntries()
    }
}

/// The lease holder's access, counted.
private struct CountingAccess: LeasedCredentialAccess {
    let storage: CountingStorage
    let inner: any LeasedCredentialAccess

    var id: CredentialID { inner.id }

    func credential() async throws(StorageError) -> StoredCredential? {
        storage.opened(try await inner.credential().map { [$0] } ?? []).first
    }

    func update(_ credential: StoredCredential) async throws(StorageError) {
        storage.count { $0.writes += 1 }
        try await inner.update(credential)
    }

    func delete() async throws(StorageError) -> StorageDeletion {
        storage.count { $0.writes += 1 }
        return try await inner.delete()
    }

    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        storage.count { $0.writes += 1 }
        return try await inner.delete(ifVersion: version)
    }

    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        storage.count { $0.writes += 1 }
        return try await inner.enqueue(entries, limit: limit)
    }
}

/// A drainer's claim, counted.
private struct CountingClaim: ClaimedOutboxEntries {
    let storage: CountingStorage
    let inner: any ClaimedOutboxEntries

    var entries: [OutboxEntry] { inner.entries }
    var damaged: [DamagedRecord] { inner.damaged }
    var backlog: OutboxBacklog { inner.backlog }

    func settle(removing removed: [UUID], updating updated: [OutboxEntry]) async throws(StorageError) {
        storage.count { $0.writes += 1 }
        try await inner.settle(removing: removed, updating: updated)
    }
}
