import Foundation
public import Logging

/// A change to a ``CredentialStore``, published on ``CredentialStore/changes``.
public enum CredentialStoreEvent: Sendable, Hashable {
    /// A credential was added.
    case added(CredentialID)
    /// A credential's tokens, tags or state changed.
    case updated(CredentialID)
    /// A credential was removed.
    case removed(CredentialID)
    /// The default credential changed (to `nil` when it was cleared).
    case defaultChanged(CredentialID?)
    /// Some changes were not published: the storage's feed of changes made elsewhere (other
    /// instances sharing a database) was cut and is back, or a subscriber fell too far behind.
    /// Read again what you show.
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
/// - Every change to a stored credential (refresh, revocation, each sign-out step, tags, state)
///   runs in one credential transaction: under the credential's lease, reading it once, writing
///   by compare-and-swap.
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
    /// Where the outbox is kept.
    package nonisolated let outbox: any OutboxStorage
    /// Whether the outbox is kept by the credentials' storage itself: then a lease holder queues
    /// through its own access (see ``LeasedCredentialAccess/enqueueThroughLease(_:limit:)``).
    nonisolated let outboxIsStorage: Bool
    /// Every change this store makes, to every subscriber of ``changes``.
    nonisolated let events = Broadcast<CredentialStoreEvent>(missed: .changesMayHaveBeenMissed)
    /// Forwards the changes other stores make to shared storage, when it tells of them.
    private let feed: Task<Void, Never>?
    /// Where the store, its credentials, sign-outs and the outbox log.
    nonisolated let logger: Logger
    /// The time the store, its handles, its leases and sign-outs go by.
    public nonisolated let clock: any LatchkeyClock
    /// The nonces resource servers gave for the DPoP proofs of this store's credentials.
    nonisolated let dpopNonces: DPoPNonces
    /// What the storage keeps beside credentials, as it declares it; providers the store calls
    /// share through it (``StorageCapabilities/current``).
    package nonisolated let capabilities: StorageCapabilities
    /// The longest a credential's lease is held (see ``LeaseTerms``): a holder's requests to a
    /// provider must be answered before it ends (a tenth less, at most five seconds, to store
    /// the answer in), so keep it longer than a provider's request timeout.
    public nonisolated let leaseDuration: Duration
    /// The most entries the outbox may hold. A sign-out whose server step can be neither sent
    /// nor queued keeps the account (nothing is dropped silently).
    public nonisolated let outboxLimit: Int
    /// The registered providers, by the issuer and client their tokens belong to.
    var providers: [ProviderIdentity: any IdentityProvider] = [:]
    /// Live handles, held weakly: a handle lives as long as its callers hold it, and the store
    /// does not keep itself alive through them.
    private var handles: [CredentialID: WeakCredential] = [:]

    /// Creates a store over one backend that keeps both the credentials and the outbox (as
    /// ``InMemoryCredentialStorage`` and the SQLite storage do).
    public init(
        storage: any CredentialStorage & OutboxStorage,
        logger: Logger? = nil,
        leaseDuration: Duration = .seconds(60),
        outboxLimit: Int = 10_000,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.init(
            credentials: storage, outbox: storage, logger: logger, leaseDuration: leaseDuration,
            outboxLimit: outboxLimit, clock: clock)
    }

    /// Creates a store over `credentials` and `outbox`.
    ///
    /// - Parameters:
    ///   - credentials: where the credentials go, e.g. ``InMemoryCredentialStorage`` or the SQLite storage.
    ///   - outbox: where server steps that failed wait.
    ///   - logger: where diagnostics go; silent by default. Token values are never logged.
    ///   - leaseDuration: the longest a credential's lease is held (see ``LeaseTerms``).
    ///   - outboxLimit: the most entries the outbox may hold.
    ///   - clock: the time of the credentials' timestamps, expiry checks, leases, backoff and time limits.
    public init(
        credentials: any CredentialStorage,
        outbox: any OutboxStorage,
        logger: Logger? = nil,
        leaseDuration: Duration = .seconds(60),
        outboxLimit: Int = 10_000,
        clock: any LatchkeyClock = SystemClock()
    ) {
        self.storage = credentials
        self.outbox = outbox
        self.outboxIsStorage = (credentials as AnyObject) === (outbox as AnyObject)
        self.logger = logger ?? .disabled("latchkey.store")
        self.leaseDuration = leaseDuration
        self.outboxLimit = max(1, outboxLimit)
        self.clock = clock
        let capabilities = credentials.capabilities
        self.capabilities = capabilities
        self.dpopNonces = DPoPNonces(storage: capabilities.dpopNonces)
        if let shared = capabilities.changeFeed {
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
    /// tells of them (its ``StorageCapabilities/changeFeed``: the PostgreSQL store does, from
    /// its change log); the SQLite store does not. A subscriber that falls more than 1,024
    /// events behind is told so with ``CredentialStoreEvent/changesMayHaveBeenMissed``.
    public nonisolated var changes: AsyncStream<CredentialStoreEvent> {
        events.subscribe()
    }

    /// The current date by the store's clock.
    nonisolated func now() -> Date { clock.date }

    // MARK: Providers and handles

    /// Registers the provider that credentials of its issuer and client came from, so that
    /// sign-out and the outbox can reach it.
    public func register(_ provider: any IdentityProvider) {
        providers[provider.identity] = provider
    }

    /// Hands `provider`'s store what it learned before this store called it (the DPoP nonces of
    /// a sign-in), so that the next process starts from them.
    nonisolated func share(learnedBy provider: any IdentityProvider) async {
        await provider.share(with: capabilities)
    }

    /// The registered provider of `identity`.
    public func provider(for identity: ProviderIdentity) -> (any IdentityProvider)? {
        providers[identity]
    }

    /// The live handle of a stored credential with `provider`. Every call for the same
    /// credential and provider returns the same handle while one is in use, so concurrent
    /// callers share one refresh (callers of other handles and other processes wait on the
    /// credential's lease instead).
    public func credential(_ id: CredentialID, provider: any IdentityProvider) -> Credential {
        // Only a handle of this very provider object: a provider registered anew (another
        // configuration, another transport) gets a handle of its own. Two handles of one
        // credential still refresh once, through the credential's lease.
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

    /// Forgets the handle of a credential that was removed.
    func forgetHandle(_ id: CredentialID) {
        handles[id] = nil
    }
}

/// A handle the store does not keep alive.
private struct WeakCredential {
    weak var credential: Credential?
}
