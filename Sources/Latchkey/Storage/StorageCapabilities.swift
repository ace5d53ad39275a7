/// What a storage keeps beside credentials and the outbox: the nonces DPoP servers give, the
/// documents providers publish, a feed of the changes other stores make, web sessions. A
/// storage declares what it keeps (``CredentialStorage/capabilities``); the store uses each
/// part it is given and keeps the rest in its own process, and hands the whole to the providers
/// it calls (``current``), so that every process and instance sharing the storage shares them.
///
/// The storage contract (`LatchkeyStorageTesting`) checks every part a storage declares. The
/// shipped backends declare every part (the change feed: PostgreSQL only).
public struct StorageCapabilities: Sendable {
    /// Where the nonces DPoP servers give are shared.
    public var dpopNonces: (any DPoPNonceStorage)?
    /// Where what providers publish (metadata, key sets) is kept for every process.
    public var providerDocuments: (any ProviderDocumentStorage)?
    /// The changes other stores sharing the storage make, published on ``CredentialStore/changes``.
    public var changeFeed: (any CredentialChangeFeed)?
    /// Where a web app's sessions are kept (``WebSessions`` needs it).
    public var webSessions: (any WebSessionStorage)?

    /// Declares the parts given; `nil` for each the storage does not keep.
    public init(
        dpopNonces: (any DPoPNonceStorage)? = nil, providerDocuments: (any ProviderDocumentStorage)? = nil,
        changeFeed: (any CredentialChangeFeed)? = nil, webSessions: (any WebSessionStorage)? = nil
    ) {
        self.dpopNonces = dpopNonces
        self.providerDocuments = providerDocuments
        self.changeFeed = changeFeed
        self.webSessions = webSessions
    }

    /// Nothing beside credentials and the outbox.
    public static var none: StorageCapabilities { StorageCapabilities() }

    /// The capabilities of the store whose call into a provider this is: a ``CredentialStore``
    /// sets them around every call it makes into a provider (a refresh, a revocation, a
    /// sign-out step, a sign-in it stores), so that a provider shares its DPoP nonces and its
    /// documents through the store that called it, whichever that is. Outside such a call,
    /// ``none``: a provider then keeps them in its own process. A provider of your own reads
    /// them here.
    public static var current: StorageCapabilities { Self.calling ?? .none }

    @TaskLocal static var calling: StorageCapabilities?
}

extension CredentialStorage {
    /// By default a storage keeps nothing beside credentials.
    public var capabilities: StorageCapabilities { .none }
}

extension StorageCapabilities {
    /// Runs `body` as a call of the store these are the capabilities of: the providers it calls
    /// share through them (``current``).
    package func sharing<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let outcome: Result<T, Failure> = await Self.$calling.withValue(self) {
            do throws(Failure) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
