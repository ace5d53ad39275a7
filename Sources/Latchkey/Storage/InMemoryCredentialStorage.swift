public import Foundation

/// Credential storage that lives in memory only: for tests and for programs that must not
/// write secrets to disk. Everything is lost when the value is released.
public actor InMemoryCredentialStorage: CredentialStorage, OutboxStorage, LeasedCredentialAccess, DPoPNonceStorage,
    ProviderDocumentStorage
{
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// Insertion order, so `all()` lists oldest first as every backend does.
    private var order: [CredentialID] = []
    private var defaultID: CredentialID?
    private var outbox: [UUID: OutboxEntry] = [:]
    /// When each claimed outbox entry's claim runs out.
    private var claims: [UUID: Date] = [:]
    /// The credentials whose lease is held, with the tasks waiting for each, in order.
    private var leases: [CredentialID: [LeaseWaiter]] = [:]
    private var dpopNonces: [String: String] = [:]
    private var providerDocuments: [String: ProviderDocument] = [:]
    /// Web sessions by handle, pending sign-ins, and the logout tokens seen (see
    /// `InMemoryCredentialStorage+WebSessions.swift`).
    var webSessionRecords: [String: WebSession] = [:]
    var pendingSignIns: [String: (payload: Data, expiresAt: Date)] = [:]
    var logoutTokensSeen: [String: Date] = [:]

    /// Creates empty storage.
    public init() {}

    public func dpopNonce(for server: String) throws(StorageError) -> String? { dpopNonces[server] }

    public func setDPoPNonce(_ nonce: String, for server: String) throws(StorageError) { dpopNonces[server] = nonce }

    public func providerDocument(for key: String) throws(StorageError) -> ProviderDocument? { providerDocuments[key] }

    public func setProviderDocument(_ document: ProviderDocument, for key: String) throws(StorageError) {
        providerDocuments[key] = document
    }

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

    public func delete(_ id: CredentialID, ifVersion version: Int) throws(StorageError) -> StorageDeletion? {
        if let stored = credentials[id], stored.version != version { return nil }
        return try delete(id)
    }

    public func defaultCredentialID() throws(StorageError) -> CredentialID? {
        defaultID
    }

    public func setDefaultCredentialID(_ id: CredentialID?) throws(StorageError) {
        if let id, credentials[id] == nil { throw .credentialNotFound(id) }
        defaultID = id
    }

    /// In memory, only this process's tasks share the storage, and a holder cannot die without
    /// the storage dying with it: the lease is a queue of waiting tasks, each of which can be
    /// cancelled, and a holder keeps it until its body returns.
    public func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        try await acquire(id)
        let result = await body(self)
        release(id)
        return result
    }

    /// Takes the lease of `id`, waiting in line while another task holds it.
    private func acquire(_ id: CredentialID) async throws(StorageError) {
        guard leases[id] != nil else {
            leases[id] = []
            return
        }
        let ticket = UUID()
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: false)
                } else {
                    leases[id, default: []].append(LeaseWaiter(ticket: ticket, continuation: continuation))
                }
            }
        } onCancel: {
            Task { await self.stopWaiting(id, ticket: ticket) }
        }
        guard granted else { throw .cancelledWaitingForLease(id) }
    }

    /// Hands the lease of `id` to the first waiter, or frees it.
    private func release(_ id: CredentialID) {
        guard var waiters = leases[id], !waiters.isEmpty else {
            leases[id] = nil
            return
        }
        let next = waiters.removeFirst()
        leases[id] = waiters
        next.continuation.resume(returning: true)
    }

    /// A cancelled waiter leaves the line (unless it was handed the lease meanwhile).
    private func stopWaiting(_ id: CredentialID, ticket: UUID) {
        guard let index = leases[id]?.firstIndex(where: { $0.ticket == ticket }) else { return }
        let waiter = leases[id]?.remove(at: index)
        waiter?.continuation.resume(returning: false)
    }

    /// Memory holds no damaged records.
    public func damagedRecords() throws(StorageError) -> [DamagedRecord] { [] }

    /// Memory holds no damaged entries.
    public func damagedOutboxEntries() throws(StorageError) -> [DamagedRecord] { [] }

    /// The storage itself is its holders' access, and reaches the outbox.
    public func enqueueThroughLease(_ entry: OutboxEntry, limit: Int) throws(StorageError) -> Bool {
        try enqueue(entry, limit: limit)
        return true
    }

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
        let until = now.addingTimeInterval(LeaseTerms(duration: duration).seconds)
        let claimed = try outboxEntries()
            .filter {
                !$0.failedPermanently && $0.nextAttemptAt <= date && (claims[$0.id] ?? .distantPast) <= now
                    && !isWaiting($0)
            }
            .prefix(max(0, limit))
        for entry in claimed { claims[entry.id] = until }
        return Array(claimed)
    }

    /// Whether `entry` waits for another entry that is still there and may still go through.
    private func isWaiting(_ entry: OutboxEntry) -> Bool {
        guard let prerequisite = entry.waitsFor.flatMap({ outbox[$0] }) else { return false }
        return !prerequisite.failedPermanently
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

/// A task waiting in line for a lease.
private struct LeaseWaiter {
    let ticket: UUID
    let continuation: CheckedContinuation<Bool, Never>
}
