public import Foundation

/// Where the processes and instances that share a store share what providers publish — their
/// metadata and their key sets — with how long each may be used, so that a process that
/// refreshes makes one request (the refresh), not three (discovery, the key set, the refresh).
///
/// What a provider publishes is public, but where refresh tokens are sent and which keys the
/// ID tokens are checked with rest on it: the shipped backends keep each document sealed with
/// the store's key, bound to its key here, so that an edited row is never trusted (it does not
/// open, reads as absent, and is fetched again). A store whose storage does not implement it
/// keeps documents in each process, as before.
public protocol ProviderDocumentStorage: Sendable {
    /// The document stored under `key` (a provider's document URL and kind), or `nil`: none, or
    /// one that does not open.
    func providerDocument(for key: String) async throws(StorageError) -> ProviderDocument?

    /// Stores `document` under `key`, replacing the one there.
    func setProviderDocument(_ document: ProviderDocument, for key: String) async throws(StorageError)

    /// Claims the revalidation of the document under `key` until `until`: the copy fetched at
    /// `fetchedAt`, past its lifetime. `true` for the one caller that wins it; `false` when the
    /// row holds another copy by now, or another caller's claim still runs at `now`.
    ///
    /// Atomic across every process and instance sharing the storage (a compare-and-swap, which
    /// ``ProviderDocument/claimingRevalidation(fetchedAt:now:until:)`` decides inside one
    /// transaction), so that twenty processes meeting one stale document send one revalidation.
    func claimProviderDocumentRevalidation(for key: String, fetchedAt: Date, now: Date, until: Date)
        async throws(StorageError) -> Bool

    /// Forgets every document kept (a provider removed, or refreshed by hand): each is fetched
    /// again when it is next needed.
    func removeProviderDocuments() async throws(StorageError)
}

/// A document a provider published (its metadata, its key set), as it was fetched.
public struct ProviderDocument: Sendable, Hashable, Codable {
    /// The body, as the provider sent it.
    public var body: Data
    /// When it was fetched.
    public var fetchedAt: Date
    /// Until when it may be used: the provider's `Cache-Control: max-age`, else Latchkey's
    /// lifetime for its kind.
    public var expiresAt: Date
    /// Its `ETag`, when the provider sent one: a revalidation asks `If-None-Match` with it.
    public var entityTag: String?
    /// Its `Last-Modified`, when the provider sent one: a revalidation asks `If-Modified-Since`.
    public var lastModified: String?
    /// Until when a process that is revalidating it (it is past ``expiresAt``) has claimed that
    /// work: meanwhile the others use it as it is.
    public var revalidationClaimedUntil: Date?

    /// Creates a document.
    public init(
        body: Data, fetchedAt: Date, expiresAt: Date, entityTag: String? = nil, lastModified: String? = nil
    ) {
        self.body = body
        self.fetchedAt = fetchedAt
        self.expiresAt = expiresAt
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// This document with its revalidation claimed until `until`, or `nil` when the claim is not
    /// to be had: it is not the copy fetched at `fetchedAt` (it was revalidated meanwhile), or
    /// another caller's claim still runs at `now`. A pure value: what each storage decides in
    /// the transaction of ``ProviderDocumentStorage/claimProviderDocumentRevalidation(for:fetchedAt:now:until:)``.
    public func claimingRevalidation(fetchedAt: Date, now: Date, until: Date) -> ProviderDocument? {
        guard self.fetchedAt == fetchedAt, (revalidationClaimedUntil.map { $0 <= now }) ?? true else { return nil }
        var claimed = self
        claimed.revalidationClaimedUntil = until
        return claimed
    }

    /// The document sealed with `sealer` for `key`, as the shipped backends store it.
    package func sealed(with sealer: Sealer, for key: String) throws(StorageError) -> Data {
        let plaintext: Data
        do {
            plaintext = try JSONEncoder().encode(self)
        } catch {
            throw StorageError(.databaseFailure, reason: "A provider document could not be encoded.", underlying: error)
        }
        return try sealer.seal(plaintext, context: SealContext.providerDocument(key))
    }

    /// The document `sealed` holds for `key`; `nil` when it does not open with `sealer` (another
    /// key, another document's row, or edited) or is not a document.
    package init?(sealed: Data, for key: String, sealer: Sealer) {
        guard let plaintext = sealer.open(sealed, context: SealContext.providerDocument(key)),
            let document = try? JSONDecoder().decode(ProviderDocument.self, from: plaintext)
        else { return nil }
        self = document
    }
}
