import Foundation
import Latchkey

/// In-memory storage whose outbox cannot be written, as on a full disk.
struct FailingOutboxStorage: CredentialStorage, OutboxStorage {
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
    /// The holder's access queues through this storage, whose outbox fails.
    func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        try await inner.withCredentialLease(for: id, terms: terms) { access in
            await body(FailingOutboxAccess(inner: access))
        }
    }
    func damagedRecords() async throws(StorageError) -> [DamagedRecord] { [] }
    func damagedOutboxEntries() async throws(StorageError) -> [DamagedRecord] { [] }
    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) { throw Self.full }
    func outboxEntries() async throws(StorageError) -> [OutboxEntry] { try await inner.outboxEntries() }
    func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result {
        try await inner.withOutboxClaim(request, terms: terms, body)
    }
    func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    ) async throws(StorageError) -> Int {
        try await inner.reviveOutboxEntries(failedFor: cause, of: providers, at: date)
    }
    func removeOutboxEntry(_ id: UUID) async throws(StorageError) -> Bool { try await inner.removeOutboxEntry(id) }

    static let full = StorageError(.databaseFailure, reason: "database or disk is full", retryable: true)
}

/// A lease holder's access whose outbox writes fail.
private struct FailingOutboxAccess: LeasedCredentialAccess {
    let inner: any LeasedCredentialAccess

    var id: CredentialID { inner.id }
    func credential() async throws(StorageError) -> StoredCredential? { try await inner.credential() }
    func update(_ credential: StoredCredential) async throws(StorageError) { try await inner.update(credential) }
    func delete() async throws(StorageError) -> StorageDeletion { try await inner.delete() }
    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try await inner.delete(ifVersion: version)
    }
    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        throw FailingOutboxStorage.full
    }
}
