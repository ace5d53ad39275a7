public import Foundation

/// Credential storage that lives in memory only: for tests and for programs that must not
/// write secrets to disk. Everything is lost when the value is released.
public actor InMemoryCredentialStorage: CredentialStorage, OutboxStorage, DPoPNonceStorage, ProviderDocumentStorage {
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// Insertion order, so `all()` lists oldest first as every backend does.
    private var order: [CredentialID] = []
    private var defaultID: CredentialID?
    private var outbox: [UUID: OutboxEntry] = [:]
    /// The claim that holds each claimed outbox entry (a claim lives while its body runs).
    private var claims: [UUID: UUID] = [:]
    /// The credentials whose lease is held, with the tasks waiting for each, in order.
    private var leases: [CredentialID: [LeaseWaiter]] = [:]
    private var dpopNonces: [String: String] = [:]
    /// The servers of ``dpopNonces``, the one recorded longest ago first.
    private var dpopNonceOrder: [String] = []
    private var providerDocuments: [String: ProviderDocument] = [:]
    /// Web sessions by handle, pending sign-ins, and the logout tokens seen (see
    /// `InMemoryCredentialStorage+WebSessions.swift`).
    var webSessionRecords: [String: WebSession] = [:]
    var pendingSignIns: [String: (payload: Data, expiresAt: Date, client: String)] = [:]
    var logoutTokensSeen: [String: Date] = [:]

    /// Creates empty storage.
    public init() {}

    /// DPoP nonces, provider documents and web sessions, in this process's memory.
    public nonisolated var capabilities: StorageCapabilities {
        StorageCapabilities(dpopNonces: self, providerDocuments: self, webSessions: self)
    }

    public func dpopNonce(for server: String) throws(StorageError) -> String? { dpopNonces[server] }

    public func setDPoPNonce(_ nonce: String, for server: String) throws(StorageError) {
        dpopNonces[server] = nonce
        dpopNonceOrder.removeAll { $0 == server }
        dpopNonceOrder.append(server)
        while dpopNonceOrder.count > DPoPNonceLimit.servers { dpopNonces[dpopNonceOrder.removeFirst()] = nil }
    }

    public func providerDocument(for key: String) throws(StorageError) -> ProviderDocument? { providerDocuments[key] }

    public func setProviderDocument(_ document: ProviderDocument, for key: String) throws(StorageError) {
        providerDocuments[key] = document
    }

    /// Claims a stale document's revalidation: atomic, as every call on the actor is.
    public func claimProviderDocumentRevalidation(for key: String, fetchedAt: Date, now: Date, until: Date)
        throws(StorageError) -> Bool
    {
        guard let claimed = providerDocuments[key]?.claimingRevalidation(fetchedAt: fetchedAt, now: now, until: until)
        else { return false }
        providerDocuments[key] = claimed
        return true
    }

    public func removeProviderDocuments() throws(StorageError) { providerDocuments = [:] }

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
            return .notFound
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
        let access = StorageLeaseAccess(id, in: self)
        let result = await body(access)
        access.scope.end()
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

    public func enqueue(_ entries: [OutboxEntry], limit: Int) throws(StorageError) {
        let growth = Set(entries.map(\.id)).filter { outbox[$0] == nil }.count
        guard outbox.count + growth <= limit else { throw .outboxFull(limit: limit) }
        for entry in entries { outbox[entry.id] = entry }
    }

    public func outboxEntries() throws(StorageError) -> [OutboxEntry] {
        outbox.values.sorted { ($0.nextAttemptAt, $0.createdAt) < ($1.nextAttemptAt, $1.createdAt) }
    }

    /// In memory, only this process's tasks drain: a claim is held by its body's task until the
    /// body returns, and cannot die without the storage.
    public func withOutboxClaim<Result: Sendable>(
        _ request: OutboxClaimRequest, terms: LeaseTerms, _ body: @Sendable (any ClaimedOutboxEntries) async -> Result
    ) async throws(StorageError) -> Result {
        let holder = UUID()
        let rows = outbox.values.map { entry in
            OutboxClaimSelection.Row(
                id: entry.id, nextAttemptAt: entry.nextAttemptAt, createdAt: entry.createdAt,
                failedPermanently: entry.failedPermanently, waitsFor: entry.waitsFor,
                tokenExpiresAt: entry.tokenExpiresAt, claimedElsewhere: claims[entry.id] != nil)
        }
        let selection = OutboxClaimSelection(rows, request: request, now: terms.clock.date)
        for id in selection.claimed { claims[id] = holder }
        let access = OutboxClaimAccess(
            entries: selection.claimed.compactMap { outbox[$0] }, damaged: [], backlog: selection.backlog
        ) { removed, updated async throws(StorageError) in
            await self.settle(removing: removed, updating: updated, holder: holder)
        }
        let result = await body(access)
        access.scope.end()
        for (id, claimant) in claims where claimant == holder { claims[id] = nil }
        return result
    }

    /// Writes a claim's outcomes, its own entries only.
    func settle(removing removed: [UUID], updating updated: [OutboxEntry], holder: UUID) {
        for id in removed where claims[id] == holder {
            outbox[id] = nil
            claims[id] = nil
        }
        for entry in updated where claims[entry.id] == holder && outbox[entry.id] != nil { outbox[entry.id] = entry }
    }

    public func reviveOutboxEntries(
        failedFor cause: OutboxEntry.FailureCause?, of providers: Set<ProviderIdentity>?, at date: Date
    ) throws(StorageError) -> Int {
        var count = 0
        for (id, entry) in outbox
        where entry.failedPermanently && (cause == nil || entry.failureCause == cause)
            && (providers?.contains(entry.provider) ?? true)
        {
            outbox[id]?.failedPermanently = false
            outbox[id]?.nextAttemptAt = date
            count += 1
        }
        return count
    }

    @discardableResult
    public func removeOutboxEntry(_ id: UUID) throws(StorageError) -> Bool {
        claims[id] = nil
        return outbox.removeValue(forKey: id) != nil
    }
}

/// A task waiting in line for a lease.
private struct LeaseWaiter {
    let ticket: UUID
    let continuation: CheckedContinuation<Bool, Never>
}
