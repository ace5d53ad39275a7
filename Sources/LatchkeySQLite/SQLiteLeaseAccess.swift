import GRDB
package import Latchkey

/// A lease holder's check, made in its write's own transaction, that the lease row still names
/// it: a holder whose lease was taken over (it stalled past its term, as a waiter on another
/// host or in another PID namespace judged it) writes nothing.
struct LeaseFence: Sendable {
    /// The lease row (`credential_id`).
    let lease: String
    /// The holder the row must still name.
    let holder: String

    /// Throws ``StorageError/Code/leaseNotHeld`` unless the row still names the holder.
    func check(_ db: Database) throws {
        let held = try Bool.fetchOne(
            db, sql: "SELECT 1 FROM refresh_lease WHERE credential_id = ? AND holder = ?",
            arguments: [lease, holder])
        guard held == true else {
            throw StorageError.leaseTakenOver(lease)
        }
    }
}

/// What the holder of a SQLite credential lease reads and writes through: the storage, scoped to
/// the lease's credential and body (``LeaseScope``). Its compare-and-swap writes go by their
/// version; its unconditional ones (a delete without a version, queued server steps) are
/// fenced by the lease row (``LeaseFence``).
struct SQLiteLeaseAccess: LeasedCredentialAccess {
    let id: CredentialID
    let storage: SQLiteCredentialStorage
    let fence: LeaseFence
    let scope: LeaseScope

    init(id: CredentialID, storage: SQLiteCredentialStorage, fence: LeaseFence) {
        self.id = id
        self.storage = storage
        self.fence = fence
        self.scope = LeaseScope(lease: id)
    }

    func credential() async throws(StorageError) -> StoredCredential? {
        try scope.check()
        return try await storage.credential(for: id)
    }

    func update(_ credential: StoredCredential) async throws(StorageError) {
        try scope.check(id, is: credential.id)
        // By compare-and-swap alone: after a takeover the answer this holder got (a rotated
        // refresh token, the only live one) is stored when nothing was written since.
        try await storage.update(credential)
    }

    func delete() async throws(StorageError) -> StorageDeletion {
        try scope.check()
        return try await storage.delete(id, version: nil, fence: fence) ?? .notFound
    }

    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try scope.check()
        return try await storage.delete(id, ifVersion: version)
    }

    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        try scope.check()
        try await storage.enqueue(entries, limit: limit, fence: fence)
        return true
    }
}

extension SQLiteCredentialStorage {
    /// Hands every lease row and outbox claim to another holder, as a waiter on another host
    /// does once their terms ran out: for the storage contract's takeover checks
    /// (`LatchkeyStorageTesting.LeaseTakeover`).
    package func handLeasesToAnotherHolder() async throws(StorageError) {
        try await write { db, _ in
            try db.execute(sql: "UPDATE refresh_lease SET holder = 'another:' || holder")
            try db.execute(sql: "UPDATE outbox SET claimed_by = 'another:' || claimed_by WHERE claimed_by IS NOT NULL")
        }
    }
}
