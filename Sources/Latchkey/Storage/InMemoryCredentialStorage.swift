public import Foundation

/// Credential storage that lives in memory only: for tests and for programs that must not
/// write secrets to disk. Everything is lost when the value is released.
public actor InMemoryCredentialStorage: CredentialStorage {
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// Insertion order, so `all()` lists oldest first as every backend does.
    private var order: [CredentialID] = []
    private var defaultID: CredentialID?
    private var outbox: [UUID: OutboxEntry] = [:]

    /// Creates empty storage.
    public init() {}

    public func all() throws(StorageError) -> [StoredCredential] {
        order.compactMap { credentials[$0] }
    }

    public func credential(for id: CredentialID) throws(StorageError) -> StoredCredential? {
        credentials[id]
    }

    public func credentials(matching query: CredentialQuery) throws(StorageError) -> [StoredCredential] {
        order.compactMap { credentials[$0] }.filter { query.matches($0.metadata) }
    }

    public func insert(_ credential: StoredCredential) throws(StorageError) {
        guard credentials[credential.id] == nil else { throw .duplicateCredential(credential.id) }
        credentials[credential.id] = credential
        order.append(credential.id)
    }

    public func update(_ credential: StoredCredential) throws(StorageError) {
        guard credentials[credential.id] != nil else { throw .credentialNotFound(credential.id) }
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

    public func enqueue(_ entry: OutboxEntry) throws(StorageError) {
        outbox[entry.id] = entry
    }

    public func outboxEntries() throws(StorageError) -> [OutboxEntry] {
        outbox.values.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
    }

    public func updateOutboxEntry(_ entry: OutboxEntry) throws(StorageError) {
        if outbox[entry.id] != nil { outbox[entry.id] = entry }
    }

    public func removeOutboxEntry(_ id: UUID) throws(StorageError) {
        outbox[id] = nil
    }
}
