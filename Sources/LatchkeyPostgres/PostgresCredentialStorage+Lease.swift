import Crypto
import Foundation
public import Latchkey
import Logging
import PostgresNIO

/// The lease of a credential is a session advisory lock (`pg_try_advisory_lock`) on a key derived
/// from its id, held by one connection of the pool for the holder's whole body, and the body
/// reads and writes on that same connection (``PostgresLeaseAccess``): a holder never waits for
/// a second connection, so any number of holders share a pool of any size without deadlock.
///
/// The lock is tied to its connection: a holder that is still working keeps it however long it
/// takes, and one whose instance dies loses it the moment its connection ends. A waiter holds no
/// connection while it waits: it tries again with backoff from 20 ms to 250 ms, and can be
/// cancelled.
extension PostgresCredentialStorage {
    public func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        let key = Self.leaseKey(id)
        let wakeup = "\(ObjectIdentifier(client).hashValue):\(key)"
        var delay = Duration.milliseconds(20)
        while true {
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            let outcome: Result?
            do {
                outcome = try await client.withConnection { connection -> Result? in
                    guard try await Self.tryLock(key, on: connection, logger: self.logger) else { return nil }
                    let access = PostgresLeaseAccess(
                        storage: self, connection: connection, scope: LeaseScope(lease: id), id: id)
                    let result = await body(access)
                    access.scope.end()
                    await self.unlock(key, on: connection)
                    LeaseWakeups.shared.release(wakeup)
                    return result
                }
            } catch {
                // A waiter cancelled while it asked the pool for a connection.
                if Task.isCancelled { throw .cancelledWaitingForLease(id) }
                let failure = Self.storageError(error, doing: "taking the lease of \(id)")
                throw failure.code == .cancelled ? .cancelledWaitingForLease(id) : failure
            }
            if let outcome { return outcome }
            logger.trace("lease held elsewhere; waiting", metadata: ["credential": "\(id)"])
            await LeaseWakeups.shared.wait(for: wakeup, atMost: delay)
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            delay = min(delay * 2, .milliseconds(250))
        }
    }

    /// The advisory lock key of a credential's lease: 64 bits of a hash of its id.
    static func leaseKey(_ id: CredentialID) -> Int64 {
        let digest = SHA256.hash(data: Data("latchkey.refresh-lease:\(id.rawValue)".utf8))
        return digest.withUnsafeBytes { bytes in bytes.loadUnaligned(as: Int64.self) }
    }

    private static func tryLock(_ key: Int64, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var taken = false
        for try await value in try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: logger)
            .decode(Bool.self)
        {
            taken = value
        }
        return taken
    }

    /// Releases the lock; when that fails, the connection is closed, which releases it too (a
    /// connection must never go back to the pool holding a lease).
    private func unlock(_ key: Int64, on connection: PostgresConnection) async {
        do {
            for try await _ in try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger) {}
        } catch {
            logger.warning("lease not released; closing its connection", metadata: ["error": "\(error)"])
            try? await connection.close()
        }
    }
}

/// What a lease holder reads and writes through: the connection that holds the lease, each
/// write in a transaction of its own (committed at once, so the token endpoint's answer is
/// stored before anything else can fail).
struct PostgresLeaseAccess: LeasedCredentialAccess {
    let storage: PostgresCredentialStorage
    let connection: PostgresConnection
    let scope: LeaseScope
    let id: CredentialID

    func credential() async throws(StorageError) -> StoredCredential? {
        try scope.check()
        return try PostgresCredentialStorage.single(
            id, try await storage.readCredentials(PostgresCredentialStorage.selectCredential(id), on: connection))
    }

    func update(_ credential: StoredCredential) async throws(StorageError) {
        try scope.check(id, is: credential.id)
        try await transaction("updating a credential") { connection in
            try await storage.update(credential, on: connection)
        }
    }

    func delete() async throws(StorageError) -> StorageDeletion {
        try scope.check()
        return try await transaction("removing a credential") { connection in
            try await storage.delete(id, on: connection)
        }
    }

    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try scope.check()
        return try await transaction("removing a credential") { connection in
            try await storage.delete(id, ifVersion: version, on: connection)
        }
    }

    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        try scope.check()
        try await transaction("queueing server steps") { connection in
            try await storage.enqueue(entries, limit: limit, on: connection)
        }
        return true
    }

    private func transaction<T: Sendable>(_ what: String, _ body: (PostgresConnection) async throws -> T)
        async throws(StorageError) -> T
    {
        do {
            return try await connection.withTransaction(logger: storage.logger) { connection in
                try await body(connection)
            }
        } catch {
            throw PostgresCredentialStorage.storageError(error, doing: what)
        }
    }
}
