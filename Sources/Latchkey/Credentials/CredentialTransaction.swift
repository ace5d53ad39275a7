import Foundation
import Logging

/// Every change to one stored credential, in one place: a transaction holds the credential's
/// lease, reads and opens the credential once, and writes it by compare-and-swap.
///
/// Refreshes, revocations, dropping revoked tokens, every step of a sign-out, tags and state all
/// run in a transaction (``CredentialStore/transaction(_:_:)``), so the promises the store makes
/// (one refresh at a time, a rotated refresh token stored before anything else can fail, nothing
/// written back from a stale read, every server step either sent or queued) are kept in one
/// place instead of by every caller.
///
/// A transaction lives as long as the body it was handed to; it is not kept.
package actor CredentialTransaction {
    /// The credential this transaction holds.
    package nonisolated let id: CredentialID
    /// The store it belongs to.
    package nonisolated let store: CredentialStore
    /// When the holder's requests must be answered by (see ``RequestDeadline``).
    package nonisolated let deadline: RequestDeadline
    private let access: any LeasedCredentialAccess
    /// The credential as read or last written: not read yet (`nil`), or what storage holds
    /// (`.some(nil)` once it is gone).
    private var current: StoredCredential??

    init(id: CredentialID, store: CredentialStore, access: any LeasedCredentialAccess, deadline: RequestDeadline) {
        self.id = id
        self.store = store
        self.access = access
        self.deadline = deadline
    }

    /// The credential as stored: read and opened once, then kept as this transaction writes it.
    /// `nil` when there is no such credential.
    package func credential() async throws(StorageError) -> StoredCredential? {
        if case .some(let known) = current { return known }
        let read = try await access.credential()
        current = .some(read)
        return read
    }

    /// The credential read again from storage: for the rare case where a writer that takes no
    /// lease (an older Latchkey in another process) may have written meanwhile.
    package func reread() async throws(StorageError) -> StoredCredential? {
        current = nil
        return try await credential()
    }

    /// Changes the credential with `change` and writes it by compare-and-swap: when another
    /// writer got in first, `change` runs again on what it wrote. A change that changes nothing
    /// writes nothing and publishes no event; `change` may throw to give up.
    ///
    /// - Returns: the credential as stored afterwards.
    /// - Throws: ``StorageError/Code/credentialNotFound`` when the credential is gone.
    @discardableResult
    package func update(_ change: @Sendable (inout StoredCredential) throws(StorageError) -> Void)
        async throws(StorageError) -> StoredCredential
    {
        for attempt in 0..<Self.maximumWriteAttempts {
            if attempt > 1 { await Self.backOff(afterLosing: attempt) }
            guard var credential = try await self.credential() else { throw .credentialNotFound(id) }
            let read = credential
            try change(&credential)
            guard credential != read else { return credential }
            credential.version = read.version
            credential.updatedAt = store.clock.date
            do {
                try await access.update(credential)
            } catch  where error.code == .versionConflict {
                store.logger.trace("credential changed meanwhile; trying again", metadata: ["credential": "\(id)"])
                current = nil
                continue
            } catch  where error.code == .credentialNotFound {
                current = .some(nil)
                throw error
            }
            credential.version += 1
            current = .some(credential)
            store.logger.debug("credential updated", metadata: ["credential": "\(id)"])
            store.events.send(.updated(id))
            return credential
        }
        throw StorageError(
            .versionConflict,
            reason: "The credential \(id) kept changing while it was being updated; nothing was written.",
            retryable: true)
    }

    /// Removes the credential from storage (and the default, when it was the default).
    /// - Returns: whether there was a credential to remove.
    @discardableResult
    package func remove() async throws(StorageError) -> Bool {
        await removed(try await access.delete())
    }

    /// Removes the credential if storage still holds `version` of it (what this transaction
    /// read), in one compare-and-swap delete; `nil` when it changed meanwhile, and nothing was
    /// removed (the next read reads it again).
    package func remove(ifVersion version: Int) async throws(StorageError) -> Bool? {
        guard let deletion = try await access.delete(ifVersion: version) else {
            current = nil
            return nil
        }
        return await removed(deletion)
    }

    /// Keeps what a deletion did: the credential is gone, its handle forgotten, the events sent.
    private func removed(_ deletion: StorageDeletion) async -> Bool {
        current = .some(nil)
        await store.forgetHandle(id)
        guard deletion.deleted else { return false }
        store.logger.debug("credential removed", metadata: ["credential": "\(id)"])
        store.events.send(.removed(id))
        if deletion.clearedDefault { store.events.send(.defaultChanged(nil)) }
        return true
    }

    /// Queues server steps in the outbox, all in one write: through the lease's own access when
    /// it reaches the outbox (so that a holder needs no second database connection), else through
    /// the store's outbox storage.
    package func enqueue(_ entries: [OutboxEntry]) async throws(StorageError) {
        if store.outboxIsStorage, try await access.enqueue(entries, limit: store.outboxLimit) { return }
        try await store.outbox.enqueue(entries, limit: store.outboxLimit)
    }

    /// How often ``update(_:)`` reads again after losing a race before it gives up.
    private static let maximumWriteAttempts = 32

    /// A pause of random length, longer after each lost race, so that writers that keep
    /// colliding spread out instead of colliding again in step. Wall time on purpose: it only
    /// spaces out retries, and a test clock that stands still must not stall them.
    private static func backOff(afterLosing attempt: Int) async {
        let ceiling = 500 * min(attempt, 16)
        try? await Task.sleep(for: .microseconds(Int.random(in: 50...ceiling)))
    }
}

extension CredentialStore {
    /// Runs `body` in the transaction of credential `id`: once its lease is held (waiting for
    /// another holder to finish), with the requests it sends bounded by the lease's deadline.
    ///
    /// - Throws: the storage's error when the lease cannot be taken (``StorageError/Code/cancelled``
    ///   when the task is cancelled while waiting), or the error `body` throws.
    package func transaction<Result: Sendable>(
        _ id: CredentialID, _ body: @Sendable (CredentialTransaction) async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        let terms = LeaseTerms(duration: leaseDuration, clock: clock)
        let outcome = try await storage.withCredentialLease(for: id, terms: terms) { access in
            let deadline = RequestDeadline(leaseOf: terms.duration, clock: terms.clock)
            let transaction = CredentialTransaction(id: id, store: self, access: access, deadline: deadline)
            // The providers the body calls share through this store, within the lease's deadline;
            // its nonce retries run as they are (the lease is held already).
            return await StorageCapabilities.$calling.withValue(capabilities) {
                await RequestDeadline.$current.withValue(deadline) {
                    await DPoPSigning.$retryRunner.withValue(nil) { () async -> Swift.Result<Result, StorageError> in
                        do throws(StorageError) {
                            return .success(try await body(transaction))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
            }
        }
        return try outcome.get()
    }
}
