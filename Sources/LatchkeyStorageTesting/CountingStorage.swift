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

    /// No use yet.
    public init() {}

    public var description: String {
        "reads \(reads), opens \(opens), listings \(listings), writes \(writes), leases \(leases)"
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

    public func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.enqueue(entry, limit: limit)
    }

    public func outboxEntries() async throws(StorageError) -> [OutboxEntry] { try await inner.outboxEntries() }

    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        count { $0.writes += 1 }
        return try await inner.claimOutboxEntries(dueBy: date, limit: limit, now: now, for: duration)
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.updateOutboxEntry(entry)
    }

    public func removeOutboxEntry(_ id: UUID) async throws(StorageError) {
        count { $0.writes += 1 }
        try await inner.removeOutboxEntry(id)
    }

    public func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] {
        try await inner.damagedOutboxEntries()
    }
}

/// The lease holder's access, counted.
private struct CountingAccess: LeasedCredentialAccess {
    let storage: CountingStorage
    let inner: any LeasedCredentialAccess

    func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        storage.opened(try await inner.credential(for: id).map { [$0] } ?? []).first
    }

    func update(_ credential: StoredCredential) async throws(StorageError) {
        storage.count { $0.writes += 1 }
        try await inner.update(credential)
    }

    func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion {
        storage.count { $0.writes += 1 }
        return try await inner.delete(id)
    }

    func delete(_ id: CredentialID, ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        storage.count { $0.writes += 1 }
        return try await inner.delete(id, ifVersion: version)
    }

    func enqueueThroughLease(_ entry: OutboxEntry, limit: Int) async throws(StorageError) -> Bool {
        storage.count { $0.writes += 1 }
        return try await inner.enqueueThroughLease(entry, limit: limit)
    }
}
