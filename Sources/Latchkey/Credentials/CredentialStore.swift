import Foundation
public import Logging

/// A change to a ``CredentialStore``, published on ``CredentialStore/changes``.
public enum CredentialStoreEvent: Sendable, Hashable {
    /// A credential was added.
    case added(CredentialID)
    /// A credential's tokens or tags changed.
    case updated(CredentialID)
    /// A credential was removed.
    case removed(CredentialID)
    /// The default credential changed (to `nil` when it was cleared).
    case defaultChanged(CredentialID?)
    /// The storage's feed of changes made elsewhere (other instances sharing a database) was
    /// cut and is back: changes made meanwhile were not published. Read again what you show.
    case changesMayHaveBeenMissed
}

/// Storage that other stores change too (other processes, other machines) and that tells of
/// their changes. A ``CredentialStore`` over such storage publishes them on
/// ``CredentialStore/changes`` beside its own.
public protocol CredentialChangeFeed: Sendable {
    /// The changes made through other stores sharing this storage, from now on, never the
    /// changes made through this storage object (the store publishes those itself). When the
    /// feed was cut and came back, it says so with ``CredentialStoreEvent/changesMayHaveBeenMissed``.
    /// The stream ends when its consumer stops.
    func changesMadeElsewhere() -> AsyncStream<CredentialStoreEvent>
}

/// Many accounts' credentials, one of which may be the default (the active account).
///
/// The store's rules:
/// - Removing the default credential sets the default to `nil`; no other account is promoted.
/// - Assigning the default, even to `nil`, never removes a credential.
/// - The first credential added while there is no default becomes the default.
/// - A storage failure is an error, never an empty store: nothing is wiped silently.
/// - Every change made through this store is published on ``changes``.
///
/// ```swift
/// let store = CredentialStore.inMemory()
/// let alice = try await store.add(token)
/// try await store.setDefault(alice.id)
/// for await event in store.changes { print(event) }
/// ```
public actor CredentialStore {
    /// Where the credentials are kept. Package-only: every change goes through the store, which
    /// keeps refreshes single-flight and publishes change events.
    package nonisolated let storage: any CredentialStorage
    /// Where the revocation outbox is kept.
    package nonisolated let outbox: any OutboxStorage
    private let events = Broadcast<CredentialStoreEvent>()
    /// Forwards the changes other stores make to shared storage, when it tells of them.
    private let feed: Task<Void, Never>?
    /// Where the store, its credentials, sign-outs and the outbox log.
    nonisolated let logger: Logger
    /// The time the store, its handles and sign-outs go by.
    public nonisolated let clock: any LatchkeyClock
    /// The longest a refresh lease is held before another holder may take it over (when its
    /// holder died, say). Keep it longer than a provider's request timeout.
    public nonisolated let refreshLeaseDuration: Duration
    /// The most entries the revocation outbox may hold. A sign-out whose revocation can be
    /// neither sent nor queued keeps the account (nothing is dropped silently).
    public nonisolated let outboxLimit: Int
    private var providers: [ProviderIdentity: any IdentityProvider] = [:]
    /// Live handles, held weakly: a handle lives as long as its callers hold it, and the store
    /// does not keep itself alive through them.
    private var handles: [CredentialID: WeakCredential] = [:]

    /// Creates a store over one backend that keeps both the credentials and the outbox (as
    /// ``InMemoryCredentialStorage`` and the SQLite storage do).
    public init(
        storage: any CredentialStorage & OutboxStorage,
        logger: Logger? = nil,
        refreshLeaseDuration: Duration = .seconds(60),
        outboxLimit: Int = 10_000,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.init(
            credentials: storage, outbox: storage, logger: logger, refreshLeaseDuration: refreshLeaseDuration,
            outboxLimit: outboxLimit, clock: clock)
    }

    /// Creates a store over `credentials` and `outbox`.
    ///
    /// - Parameters:
    ///   - credentials: where the credentials go, e.g. ``InMemoryCredentialStorage`` or the SQLite storage.
    ///   - outbox: where failed revocations wait.
    ///   - logger: where diagnostics go; silent by default. Token values are never logged.
    ///   - refreshLeaseDuration: how long a refresh lease lasts at most (see
    ///     ``CredentialStorage/withRefreshLease(for:duration:_:)``).
    ///   - outboxLimit: the most entries the revocation outbox may hold.
    ///   - clock: the time of the credentials' timestamps, expiry checks, backoff and time limits.
    public init(
        credentials: any CredentialStorage,
        outbox: any OutboxStorage,
        logger: Logger? = nil,
        refreshLeaseDuration: Duration = .seconds(60),
        outboxLimit: Int = 10_000,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.storage = credentials
        self.outbox = outbox
        self.logger = logger ?? .disabled("latchkey.store")
        self.refreshLeaseDuration = refreshLeaseDuration
        self.outboxLimit = max(1, outboxLimit)
        self.clock = clock
        if let shared = credentials as? any CredentialChangeFeed {
            let events = self.events
            feed = Task {
                for await event in shared.changesMadeElsewhere() { events.send(event) }
            }
        } else {
            feed = nil
        }
    }

    deinit {
        feed?.cancel()
    }

    /// A store that keeps everything in memory, for tests and short-lived programs.
    public static func inMemory() -> CredentialStore {
        CredentialStore(storage: InMemoryCredentialStorage())
    }

    /// Every change made through this store from now on, as an `AsyncSequence`.
    ///
    /// Each access returns a new, independent stream; it ends when the store is released.
    /// Changes that other processes make to shared storage are published too when the storage
    /// tells of them (``CredentialChangeFeed``: the PostgreSQL store does, over
    /// `LISTEN`/`NOTIFY`); the SQLite store does not.
    public nonisolated var changes: AsyncStream<CredentialStoreEvent> {
        events.subscribe()
    }

    // MARK: Adding and changing

    /// The current date by the store's clock.
    nonisolated func now() -> Date { clock.date }

    /// Stores a new credential for `token`, with metadata read from its ID token.
    ///
    /// - Parameters:
    ///   - token: the tokens of a sign-in.
    ///   - accountClaims: the account's claims when the token has no ID token (from userinfo,
    ///     say); the ID token's claims win when it has one.
    ///   - tags: labels of the application's choosing.
    ///   - makeDefault: make the new credential the default. When the store has no default,
    ///     it becomes the default anyway.
    /// - Returns: the stored credential, with its new identifier.
    @discardableResult
    public func add(
        _ token: Token,
        accountClaims: [String: JSONValue]? = nil,
        tags: [String: String] = [:],
        makeDefault: Bool = false
    ) async throws(StorageError) -> StoredCredential {
        let date = clock.date
        var metadata = CredentialMetadata(token: token, tags: tags)
        if token.idToken == nil, let accountClaims { metadata.read(accountClaims) }
        let credential = StoredCredential(
            id: CredentialID(), token: token, metadata: metadata, createdAt: date, updatedAt: date, version: 1)
        try await storage.insert(credential)
        logger.debug("credential added", metadata: ["credential": "\(credential.id)"])
        events.send(.added(credential.id))
        if makeDefault {
            try await assignDefault(credential.id)
        } else if try await storage.defaultCredentialID() == nil {
            try await assignDefault(credential.id)
        }
        return credential
    }

    /// Changes a stored credential with `change`, as one compare-and-swap: `change` is handed
    /// the credential as stored now, and when another writer got in first it is handed the
    /// newer one and runs again. Nothing is ever written back from a stale read.
    ///
    /// `change` may throw to give up; nothing is written then. A change that changes nothing
    /// writes nothing and publishes no event.
    /// - Returns: the credential as stored afterwards.
    @discardableResult
    public func update(
        _ id: CredentialID, _ change: (inout StoredCredential) throws(StorageError) -> Void
    ) async throws(StorageError) -> StoredCredential {
        for attempt in 0..<Self.maximumWriteAttempts {
            if attempt > 1 { await Self.backOff(afterLosing: attempt) }
            guard var credential = try await storage.credential(for: id) else { throw .credentialNotFound(id) }
            let read = credential
            try change(&credential)
            guard credential != read else { return credential }
            credential.version = read.version
            credential.updatedAt = clock.date
            do {
                try await storage.update(credential)
            } catch  where error.code == .versionConflict {
                logger.trace("credential changed meanwhile; trying again", metadata: ["credential": "\(id)"])
                continue
            }
            credential.version += 1
            logger.debug("credential updated", metadata: ["credential": "\(id)"])
            events.send(.updated(id))
            return credential
        }
        throw StorageError(
            .versionConflict,
            reason: "The credential \(id) kept changing while it was being updated; nothing was written.",
            retryable: true)
    }

    /// How often ``update(_:_:)`` reads again after losing a race before it gives up.
    private static let maximumWriteAttempts = 32

    /// A pause of random length, longer after each lost race, so that writers that keep
    /// colliding (forty at once on one credential, say) spread out instead of colliding again in
    /// step. Wall time on purpose: it only spaces out retries, and a test clock that stands
    /// still must not stall them.
    private static func backOff(afterLosing attempt: Int) async {
        let ceiling = 500 * min(attempt, 16)
        try? await Task.sleep(for: .microseconds(Int.random(in: 50...ceiling)))
    }

    /// Replaces the tokens of a stored credential (after a refresh, say).
    ///
    /// Account metadata is read again from the new ID token; when the new token has none, the
    /// metadata read earlier is kept. Tags are kept.
    @discardableResult
    public func update(_ id: CredentialID, token: Token) async throws(StorageError) -> StoredCredential {
        try await update(id) { credential in credential.replaceToken(with: token) }
    }

    /// Replaces the application tags of a stored credential.
    @discardableResult
    public func setTags(_ tags: [String: String], for id: CredentialID) async throws(StorageError) -> StoredCredential {
        try await update(id) { credential in credential.metadata.tags = tags }
    }

    /// Removes a credential from this store (local only: no server is told, and its tokens stay
    /// valid on the server until they expire or are revoked).
    ///
    /// When it was the default, the default becomes `nil`.
    /// - Returns: whether a credential was removed.
    @discardableResult
    public func remove(_ id: CredentialID) async throws(StorageError) -> Bool {
        let deletion = try await storage.delete(id)
        handles[id] = nil
        guard deletion.deleted else { return false }
        logger.debug("credential removed", metadata: ["credential": "\(id)"])
        events.send(.removed(id))
        if deletion.clearedDefault { events.send(.defaultChanged(nil)) }
        return true
    }

    /// Runs `body` holding the refresh lease of `id` (see
    /// ``CredentialStorage/withRefreshLease(for:duration:_:)``).
    func withRefreshLease<Result: Sendable>(
        _ id: CredentialID, _ body: @Sendable () async -> Result
    ) async throws(StorageError) -> Result {
        try await storage.withRefreshLease(for: id, duration: refreshLeaseDuration, body)
    }

    // MARK: Providers

    /// Registers the provider that credentials of its issuer and client came from, so that
    /// sign-out and the revocation outbox can reach it.
    public func register(_ provider: any IdentityProvider) {
        providers[provider.identity] = provider
    }

    /// The live handle of a stored credential with `provider`. Every call for the same
    /// credential and provider returns the same handle while one is in use, so concurrent
    /// callers share one refresh (callers of other handles and other processes wait on the
    /// store's refresh lease instead).
    public func credential(_ id: CredentialID, provider: any IdentityProvider) -> Credential {
        // Only a handle of this very provider object: a provider registered anew (another
        // configuration, another transport) gets a handle of its own. Two handles of one
        // credential still refresh once, through the store's refresh lease.
        if let existing = handles[id]?.credential,
            ObjectIdentifier(existing.provider as AnyObject) == ObjectIdentifier(provider as AnyObject)
        {
            return existing
        }
        handles = handles.filter { $0.value.credential != nil }
        let handle = Credential(id: id, store: self, provider: provider)
        handles[id] = WeakCredential(credential: handle)
        return handle
    }

    /// The registered provider of `identity`.
    public func provider(for identity: ProviderIdentity) -> (any IdentityProvider)? {
        providers[identity]
    }

    // MARK: Reading

    /// The credential with this identifier, or `nil`.
    public func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        try await storage.credential(for: id)
    }

    /// Every stored credential that can be read, oldest first (see ``damagedRecords()``).
    public func all() async throws(StorageError) -> [StoredCredential] {
        try await storage.all()
    }

    /// The records that cannot be read, by id: left as they are, and out of every listing, so
    /// that every other account keeps working. ``remove(_:)`` (a credential) or
    /// ``dropOutboxEntry(_:)`` removes one on purpose.
    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        try await storage.damagedRecords() + outbox.damagedOutboxEntries()
    }

    /// The credentials matching an indexed query (subject, username, email, issuer).
    public func find(_ query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        try await storage.credentials(matching: query)
    }

    /// The credentials whose metadata satisfies `predicate`. Only the matches' tokens are read.
    public func find(
        where predicate: @Sendable (CredentialMetadata) -> Bool
    ) async throws(StorageError) -> [StoredCredential] {
        var found: [StoredCredential] = []
        for summary in try await storage.accounts() where predicate(summary.metadata) {
            if let credential = try await storage.credential(for: summary.id) { found.append(credential) }
        }
        return found
    }

    /// A summary of every account, oldest first, read without opening any token: what a listing
    /// shows (see ``AccountSummary``).
    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await storage.accounts()
    }

    // MARK: The default credential

    /// The default credential (the active account), or `nil` when none is set.
    public var `default`: StoredCredential? {
        get async throws(StorageError) {
            guard let id = try await storage.defaultCredentialID() else { return nil }
            return try await storage.credential(for: id)
        }
    }

    /// Makes `id` the default credential, or clears the default with `nil`.
    ///
    /// Never removes a credential. Throws ``StorageError/Code/credentialNotFound`` when `id`
    /// names no stored credential.
    ///
    /// Setting it also replaces a damaged default marker (see ``damagedRecords()``).
    public func setDefault(_ id: CredentialID?) async throws(StorageError) {
        do {
            guard try await storage.defaultCredentialID() != id else { return }
        } catch  where error.code == .corruptRecord {
            logger.debug("replacing a damaged default marker")
        }
        try await assignDefault(id)
    }

    private func assignDefault(_ id: CredentialID?) async throws(StorageError) {
        try await storage.setDefaultCredentialID(id)
        events.send(.defaultChanged(id))
    }
}

/// A handle the store does not keep alive.
private struct WeakCredential {
    weak var credential: Credential?
}

extension StoredCredential {
    /// Replaces the tokens; account metadata is read again from the new ID token, or kept when
    /// the new token has none. Tags are kept.
    mutating func replaceToken(with token: Token) {
        if token.idToken != nil {
            let tags = metadata.tags
            var fresh = CredentialMetadata(token: token, tags: tags)
            // Claims the new ID token leaves out (a refresh's ID token is often thinner) keep
            // the values read before.
            fresh.preferredUsername = fresh.preferredUsername ?? metadata.preferredUsername
            fresh.email = fresh.email ?? metadata.email
            fresh.name = fresh.name ?? metadata.name
            metadata = fresh
        } else {
            metadata.issuer = token.provider.issuer
            metadata.clientID = token.provider.clientID
        }
        self.token = token
    }
}
