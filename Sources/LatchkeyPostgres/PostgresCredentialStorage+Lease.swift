import Foundation
public import Latchkey
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The lease of a credential is a row of `latchkey_lease`: the credential, the holder (a
/// token of its own for each time the lease is taken) and the date the row runs out, by the
/// database's clock (``databaseNow``), never an instance's: the fleet's instances agree on
/// whether a row has run out however far their own clocks drift. It holds
/// through any connection path — directly, or through a pooler in session or transaction
/// mode, or a server that only speaks PostgreSQL's protocol — because it is made of one-statement
/// writes and row locks, never of a lock tied to a server connection:
///
/// - **Taking** is one statement: insert the row, or take over one whose date has passed.
/// - **Holding**: the holder renews the date every third of ``rowTerm(_:)`` while its body
///   works, so a holder that is still working is never overtaken; one whose instance died (or
///   was stopped) loses the lease when its row runs out, within ``rowTerm(_:)``.
/// - **Fencing**: the unconditional writes through the lease's access (a delete without a
///   version, queued server steps) check, in their own transaction and under a row lock
///   (`FOR SHARE`), that the row still names its holder: a holder whose lease was taken over (it
///   stalled past its row's date) makes none of them. Its compare-and-swap writes go by their
///   version: the answer it got from the provider meanwhile (a rotated refresh token, the only
///   live one) is stored when nothing was written since, refused when something was.
/// - **Releasing** deletes the row (its holder's only).
///
/// Within one instance the storage knows its own holders: a waiter of this storage never takes
/// a lease from a holder of this storage (whatever the clock says), and is woken the moment it
/// is released. Across instances a waiter polls with backoff from 20 ms to 250 ms, holding no
/// connection, and can be cancelled.
extension PostgresCredentialStorage {
    public func withCredentialLease<Result: Sendable>(
        for id: CredentialID, terms: LeaseTerms, _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async throws(StorageError) -> Result {
        let wakeup = "\(origin):\(id.rawValue)"
        var delay = Duration.milliseconds(20)
        while true {
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            if let holder = try await take(id, terms: terms) {
                let result = await hold(id, holder: holder, terms: terms, body)
                leasesHeldHere.withLockedValue { _ = $0.remove(id) }
                LeaseWakeups.shared.release(wakeup)
                return result
            }
            logger.trace("lease held elsewhere; waiting", metadata: ["credential": "\(id)"])
            await LeaseWakeups.shared.wait(for: wakeup, atMost: delay)
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            delay = min(delay * 2, .milliseconds(250))
        }
    }

    /// How long a lease row outlives a holder that stopped renewing it: the lease's duration,
    /// at most 15 seconds. The lease's duration stays the longest its holder's requests may
    /// take; a dead instance holds nobody up longer than this.
    static func rowTerm(_ terms: LeaseTerms) -> TimeInterval { min(terms.seconds, 15) }

    /// The database's time, as the schema's dates are kept (seconds since 2001-01-01, the
    /// reference date): what every lease and claim expiry is set and judged by.
    static let databaseNow = "(EXTRACT(EPOCH FROM statement_timestamp())::double precision - 978307200)"

    /// Takes the lease for a new holder, or `nil` when it is held (here or elsewhere).
    private func take(_ id: CredentialID, terms: LeaseTerms) async throws(StorageError) -> String? {
        guard leasesHeldHere.withLockedValue({ $0.insert(id).inserted }) else { return nil }
        let holder = UUID().uuidString
        let term = Self.rowTerm(terms)
        do {
            // Judged by the database's clock, never this instance's: an instance whose clock is
            // ahead would take a live lease, one whose clock is behind would keep a dead one.
            let taken = try await Self.count(
                client.query(
                    """
                    INSERT INTO latchkey_lease AS lease (id, holder, expires_at)
                    VALUES (\(id.rawValue), \(holder), \(unescaped: Self.databaseNow) + \(term))
                    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                    WHERE lease.expires_at <= \(unescaped: Self.databaseNow)
                    RETURNING 1
                    """, logger: logger))
            if taken == 1 { return holder }
        } catch {
            leasesHeldHere.withLockedValue { _ = $0.remove(id) }
            if Task.isCancelled { throw .cancelledWaitingForLease(id) }
            let failure = Self.storageError(error, doing: "taking the lease of \(id)")
            throw failure.code == .cancelled ? .cancelledWaitingForLease(id) : failure
        }
        leasesHeldHere.withLockedValue { _ = $0.remove(id) }
        return nil
    }

    /// Runs `body` with the lease, renewing its row meanwhile, then releases it (also when the
    /// holder's task was cancelled: the release runs in a task of its own).
    private func hold<Result: Sendable>(
        _ id: CredentialID, holder: String, terms: LeaseTerms,
        _ body: @Sendable (any LeasedCredentialAccess) async -> Result
    ) async -> Result {
        let access = PostgresLeaseAccess(storage: self, holder: holder, scope: LeaseScope(lease: id), id: id)
        let result = await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.renew(id, holder: holder, terms: terms) }
            let result = await body(access)
            group.cancelAll()
            return result
        }
        access.scope.end()
        await Task {
            do {
                try await execute(
                    "DELETE FROM latchkey_lease WHERE id = \(id.rawValue) AND holder = \(holder)",
                    doing: "releasing the lease of \(id)")
            } catch {
                // The row runs out by itself.
                logger.warning("lease not released", metadata: ["credential": "\(id)", "error": "\(error)"])
            }
        }.value
        return result
    }

    /// Keeps the row of `holder` ahead while its body runs. Returns when cancelled.
    private func renew(_ id: CredentialID, holder: String, terms: LeaseTerms) async {
        let term = Self.rowTerm(terms)
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: .seconds(term / 3))
                let renewed = try await Self.count(
                    client.query(
                        """
                        UPDATE latchkey_lease SET expires_at = \(unescaped: Self.databaseNow) + \(term)
                        WHERE id = \(id.rawValue) AND holder = \(holder) RETURNING 1
                        """, logger: logger))
                if renewed == 0 {
                    logger.warning("lease lost while held; its writes are refused", metadata: ["credential": "\(id)"])
                    return
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("lease not renewed", metadata: ["credential": "\(id)", "error": "\(error)"])
            }
        }
    }

    /// Checks, at open, what the lease rests on, on this connection path: a probe lease taken by
    /// one holder is refused to a second. A server (or a proxy before it) that lets both take it
    /// would let two instances refresh one credential at once; the store refuses to open there.
    static func checkLeaseExcludes(_ client: PostgresClient, logger: Logger) async throws(StorageError) {
        let probe = "latchkey.open-probe.\(UUID().uuidString)"
        func take(_ holder: String) async throws -> Bool {
            try await count(
                client.query(
                    """
                    INSERT INTO latchkey_lease AS lease (id, holder, expires_at) VALUES (\(probe), \(holder), 'Infinity')
                    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                    WHERE lease.expires_at <= 0
                    RETURNING 1
                    """, logger: logger)) == 1
        }
        let (first, second): (Bool, Bool)
        do {
            first = try await take("first")
            second = try await take("second")
            for try await _ in try await client.query("DELETE FROM latchkey_lease WHERE id = \(probe)", logger: logger)
            {}
        } catch {
            throw storageError(error, doing: "checking that the lease excludes")
        }
        guard first, !second else {
            throw StorageError(
                .unsupported,
                reason:
                    "This database let two sessions take one credential's lease at once (a probe at open): two instances could refresh one credential together and replay its refresh token. Latchkey's fleet store needs PostgreSQL's unique indexes and row locks on this connection path: connect to PostgreSQL directly, or through PgBouncer in session or transaction mode. Nothing was changed."
            )
        }
    }

    /// Fails unless `holder` still holds the lease of `id`, and keeps the row from being taken
    /// over until the transaction of `connection` ends.
    static func fence(_ id: CredentialID, holder: String, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        let held = try await count(
            connection.query(
                "SELECT 1 FROM latchkey_lease WHERE id = \(id.rawValue) AND holder = \(holder) FOR SHARE",
                logger: logger))
        guard held == 1 else {
            throw StorageError.leaseTakenOver(id.rawValue)
        }
    }
}

/// What a lease holder reads and writes through: the storage's pool, each write in a
/// transaction of its own (committed at once, so the token endpoint's answer is stored before
/// anything else can fail); an unconditional one first checks the lease is still its holder's.
struct PostgresLeaseAccess: LeasedCredentialAccess {
    let storage: PostgresCredentialStorage
    let holder: String
    let scope: LeaseScope
    let id: CredentialID

    func credential() async throws(StorageError) -> StoredCredential? {
        try scope.check()
        return try PostgresCredentialStorage.single(
            id, try await storage.readCredentials(PostgresCredentialStorage.selectCredential(id)))
    }

    func update(_ credential: StoredCredential) async throws(StorageError) {
        try scope.check(id, is: credential.id)
        // By compare-and-swap alone: after a takeover the answer this holder got (a rotated
        // refresh token, the only live one) is stored when nothing was written since.
        try await storage.credentialTransaction("updating a credential") { connection in
            try await storage.update(credential, on: connection)
        }
    }

    func delete() async throws(StorageError) -> StorageDeletion {
        try scope.check()
        return try await fenced("removing a credential") { connection in
            try await storage.delete(id, on: connection)
        }
    }

    func delete(ifVersion version: Int) async throws(StorageError) -> StorageDeletion? {
        try scope.check()
        return try await storage.credentialTransaction("removing a credential") { connection in
            try await storage.delete(id, ifVersion: version, on: connection)
        }
    }

    func enqueue(_ entries: [OutboxEntry], limit: Int) async throws(StorageError) -> Bool {
        try scope.check()
        try await fenced("queueing server steps") { connection in
            try await storage.enqueue(entries, limit: limit, on: connection)
        }
        return true
    }

    private func fenced<T: Sendable>(_ what: String, _ body: @Sendable (PostgresConnection) async throws -> T)
        async throws(StorageError) -> T
    {
        let (id, holder, logger) = (id, holder, storage.logger)
        return try await storage.credentialTransaction(what) { connection in
            try await PostgresCredentialStorage.fence(id, holder: holder, on: connection, logger: logger)
            return try await body(connection)
        }
    }
}
