public import Foundation

/// Credential storage that lives in memory only: for tests and for programs that must not
/// write secrets to disk. Everything is lost when the value is released.
public actor InMemoryCredentialStorage: CredentialStorage, OutboxStorage {
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// Insertion order, so `all()` lists oldest first as every backend does.
    private var order: [CredentialID] = []
    private var defaultID: CredentialID?
    private var outbox: [UUID: OutboxEntry] = [:]
    /// When each claimed outbox entry's claim runs out.
    private var claims: [UUID: Date] = [:]
    /// The credentials whose refresh lease is held, with the holders waiting for each, in order.
    private var leases: [CredentialID: [CheckedContinuation<Void, Never>]] = [:]

    /// Creates empty storage.
    public init() {}

    public func all() throws(StorageError) -> [StoredCredential] {
        order.compactMap { credentials[$0] }
    }

    public func accounts() throws(StorageError) -> [AccountSummary] {
        order.compactMap { credentials[$0] }.map(AccountSummary.init)
    }

    public func credential(for id: CredentialID) throws(StorageError) -> StoredCredential? {
        credentials[id]
    }

    public func credentials(matching query: CredentialQuery) throws(StorageError) -> [StoredCredential] {
        order.compactMap { credentials[$0] }.filter { query.matches($0.metadata) }
    }

    public func insert(_ credential: StoredCredential) throws(StorageError) {
        guard credentials[credential.id] == nil else { throw .duplicateCredential(credential.id) }
        var credential = credential
        credential.version = 1
        credentials[credential.id] = credential
        order.append(credential.id)
    }

    public func update(_ credential: StoredCredential) throws(StorageError) {
        guard let stored = credentials[credential.id] else { throw .credentialNotFound(credential.id) }
        guard stored.version == credential.version else { throw .versionConflict(credential.id) }
        var credential = credential
        credential.version += 1
        credentials[credential.id] = credential
    }

    public func delete(_ id: CredentialID) throws(StorageError) -> StorageDeletion {
        guard credentials.removeValue(forKey: id) != nil else {
            return StorageDeletion(deleted: false, clearedDefault: false)
        }
        order.removeAll { $0 == id }
        let wasDefault = defaultID == id
        if wasDefault { defaultID = nil }
        return StorageDeletion(deleted: true, clearedDefault: wasDefault)
    }

    public func defaultCredentialID() throws(StorageError) -> CredentialID? {
        defaultID
    }

    public func setDefaultCredentialID(_ id: CredentialID?) throws(StorageError) {
        if let id, credentials[id] == nil { throw .credentialNotFound(id) }
        defaultID = id
    }

    /// In memory, only this process's tasks share the storage, and a holder cannot die without
    /// the storage dying with it: the lease is a queue, and `duration` does not apply.
    public func withRefreshLease<Result: Sendable>(
        for id: CredentialID, duration: Duration, _ body: @Sendable () async -> Result
    ) async throws(StorageError) -> Result {
        if leases[id] == nil {
            leases[id] = []
        } else {
            await withCheckedContinuation { leases[id, default: []].append($0) }
        }
        let result = await body()
        if let next = leases[id]?.first {
            leases[id]?.removeFirst()
            next.resume()
        } else {
            leases[id] = nil
        }
        return result
    }

    /// Memory holds no damaged records.
    public func damagedRecords() throws(StorageError) -> [DamagedRecord] { [] }

    /// Memory holds no damaged entries.
    public func damagedOutboxEntries() throws(StorageError) -> [DamagedRecord] { [] }

    public func enqueue(_ entry: OutboxEntry, limit: Int) throws(StorageError) {
        guard outbox[entry.id] != nil || outbox.count < limit else { throw .outboxFull(limit: limit) }
        outbox[entry.id] = entry
    }

    public func outboxEntries() throws(StorageError) -> [OutboxEntry] {
        outbox.values.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
    }

    public func claimOutboxEntries(dueBy date: Date, limit: Int, now: Date, for duration: Duration)
        throws(StorageError) -> [OutboxEntry]
    {
        let until = now.addingTimeInterval(Double(duration.components.seconds))
        let claimed = try outboxEntries()
            .filter { !$0.failedPermanently && $0.nextAttemptAt <= date && (claims[$0.id] ?? .distantPast) <= now }
            .prefix(max(0, limit))
        for entry in claimed { claims[entry.id] = until }
        return Array(claimed)
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) throws(StorageError) {
        if outbox[entry.id] != nil { outbox[entry.id] = entry }
        claims[entry.id] = nil
    }

    public func removeOutboxEntry(_ id: UUID) throws(StorageError) {
        outbox[id] = nil
        claims[id] = nil
    }
}
