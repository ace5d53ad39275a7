import Foundation
import Latchkey

/// In-memory storage whose outbox cannot be written, as on a full disk.
struct FailingOutboxStorage: CredentialStorage, OutboxStorage, LeasedCredentialAccess {
    let inner = InMemoryCredentialStorage()

    func all() async throws(StorageError) -> [StoredCredential] { try await inner.all() }
    func accounts() async throws(StorageError) -> [AccountSummary] { try await inner.accounts() }
    func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        try await inner.credential(for: id)
    }
    func credentials(matching query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        try await inner.credentials(matching: query)
    }
    func insert(_ credential: StoredCredential) async throws(StorageError) { try await inner.insert(credential) }
    func update(_ credential: StoredCredential) async throws(StorageError) { try await inner.update(credential) }
    func delete(_ id: CredentialID) async throws(StorageError) -> StorageDeletion { try await inner.delete(id) }
    func defaultCredentialID() async throws(StorageError) -> CredentialID? { try await inner.defaultCredentialID() }
    func setDefaultCredentialID(_ id: CredentialID?) async throws(StorageError) {
        try await inner.setDefaultCredentialID(id)
    }
    /// The holder works through this storage, whose outbox fails.
    func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        try await inner.withCredentialLease(for: id, terms: terms) { _ in await body(self) }
    }
    func damagedRecords() async throws(StorageError) -> [DamagedRecord] { [] }
    func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] { [] }
    func enqueue(_ entry: OutboxEntry, limit: Int) async throws(StorageError) {
        throw StorageError(.databaseFailure, reason: "database or disk is full", retryable: true)
    }
    func outboxEntries() async throws(StorageError) -> [OutboxEntry] { try await inner.outboxEntries() }
    func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        async throws(StorageError) -> [OutboxEntry]
    {
        try await inner.claimOutboxEntries(dueBy: date, limit: limit, now: now, for: duration)
    }
    func updateOutboxEntry(_ entry: OutboxEntry) async throws(StorageError) { try await inner.updateOutboxEntry(entry) }
    func removeOutboxEntry(_ id: UUID) async throws(StorageError) { try await inner.removeOutboxEntry(id) }
}
