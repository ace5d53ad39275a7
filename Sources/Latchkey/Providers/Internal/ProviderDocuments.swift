package import Foundation
package import HTTPTypes
package import Logging

/// What a provider published (its metadata, its key set), kept in the storage of the store that
/// calls the provider (``StorageCapabilities/providerDocuments`` of
/// ``StorageCapabilities/current``) until it expires, so that every process sharing the store
/// uses one fetch: a command-line refresh then costs one round trip, the refresh itself.
///
/// Outside a store's call, with a storage that keeps no documents, and when the storage fails
/// (a storage failure is logged and never fails a request), documents are fetched as before,
/// once per process.
package final class ProviderDocuments: Sendable {
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    /// The document at `url`, read by `read`: the store's copy while it is valid at `now` (and
    /// fetched after `newerThan`, when given: a copy at least as old as the caller's is no help)
    /// and `read` takes it, else the one `fetch` gets. A fetched document is kept in the store
    /// for its lifetime (`Cache-Control: max-age`, else `lifetime`; never with `no-store`) only
    /// once `read` took it: a document that fails its checks (another issuer, not a key set) is
    /// never kept, so a provider that fixes it is seen at the next fetch.
    ///
    /// A copy past its lifetime, but by no more than that lifetime again (``staleBound`` at most),
    /// is used as it is while it is revalidated in the background (RFC 5861's
    /// stale-while-revalidate): the caller's refresh stays one round trip. The revalidation is
    /// claimed in the store first (the copy counts as fresh for ``revalidationClaim``), so that
    /// processes sharing the store send one, and it asks `If-None-Match` / `If-Modified-Since`:
    /// a `304` keeps the body for another lifetime. A copy older than that is revalidated before
    /// it is used.
    package func document<Read: Sendable>(
        _ kind: EndpointKind, at url: URL, now: Date, lifetime: TimeInterval, newerThan: Date? = nil,
        read: @escaping @Sendable (ProviderDocument) throws(ProviderError) -> Read,
        fetch: @escaping @Sendable (HTTPFields) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> Read {
        try await document(
            keyed: Self.key(kind, url), now: now, lifetime: lifetime, newerThan: newerThan, read: read, fetch: fetch)
    }

    /// The document kept under `key`, as ``document(_:at:now:lifetime:newerThan:read:fetch:)``
    /// keeps a provider's: for a document of another party (a protected resource's metadata).
    package func document<Read: Sendable>(
        keyed key: String, now: Date, lifetime: TimeInterval, newerThan: Date? = nil,
        read: @escaping @Sendable (ProviderDocument) throws(ProviderError) -> Read,
        fetch: @escaping @Sendable (HTTPFields) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> Read {
        let storage = StorageCapabilities.current.providerDocuments
        var known: ProviderDocument?
        if let storage {
            do {
                if let stored = try await storage.providerDocument(for: key),
                    newerThan.map({ stored.fetchedAt > $0 }) ?? true
                {
                    known = stored
                    switch DocumentFreshness(stored, now: now) {
                    case .fresh:
                        do throws(ProviderError) {
                            return try read(stored)
                        } catch {
                            known = nil
                            logger.debug("the store's copy of a provider document fails its checks; fetching it again")
                        }
                    case .stale(let claimed):
                        if let value = try? read(stored) {
                            if claimed { return value }
                            await revalidateInBackground(
                                stored, key: key, now: now, lifetime: lifetime, storage: storage, read: read,
                                fetch: fetch)
                            return value
                        }
                        known = nil
                    case .expired:
                        break
                    }
                }
            } catch {
                logger.debug("the store's copy of a provider document cannot be read", metadata: ["error": "\(error)"])
            }
        }
        return try await fetchAndKeep(
            known, key: key, now: now, lifetime: lifetime, storage: storage, read: read, fetch: fetch)
    }

    /// Fetches the document (conditionally, when `known` has validators), reads it, and keeps it.
    private func fetchAndKeep<Read: Sendable>(
        _ known: ProviderDocument?, key: String, now: Date, lifetime: TimeInterval,
        storage: (any ProviderDocumentStorage)?, read: (ProviderDocument) throws(ProviderError) -> Read,
        fetch: (HTTPFields) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> Read {
        let answer = try await fetch(known.map(Self.conditions) ?? [:])
        let headers = answer.response.headerFields
        let kept = DocumentLifetime.seconds(headers, fallback: lifetime)
        let body = answer.response.status == .notModified ? known?.body ?? answer.body : answer.body
        let document = ProviderDocument(
            body: body, fetchedAt: now, expiresAt: now.addingTimeInterval(kept ?? 0),
            entityTag: headers[.eTag] ?? known?.entityTag, lastModified: headers[.lastModified] ?? known?.lastModified)
        let value = try read(document)
        if let storage, let kept, kept > 0 {
            do {
                try await storage.setProviderDocument(document, for: key)
            } catch {
                logger.debug("a provider document cannot be kept in the store", metadata: ["error": "\(error)"])
            }
        }
        return value
    }

    /// Claims the revalidation of a stale copy in the store (a compare-and-swap: of many callers
    /// that saw it unclaimed, one wins), then revalidates it in a task of its own; a failure
    /// leaves the copy to the next caller once the claim runs out.
    private func revalidateInBackground<Read: Sendable>(
        _ stale: ProviderDocument, key: String, now: Date, lifetime: TimeInterval,
        storage: any ProviderDocumentStorage,
        read: @escaping @Sendable (ProviderDocument) throws(ProviderError) -> Read,
        fetch: @escaping @Sendable (HTTPFields) async throws(ProviderError) -> HTTPTransportResponse
    ) async {
        do {
            guard
                try await storage.claimProviderDocumentRevalidation(
                    for: key, fetchedAt: stale.fetchedAt, now: now,
                    until: now.addingTimeInterval(Self.revalidationClaim))
            else { return }
        } catch {
            return
        }
        let logger = self.logger
        logger.debug("a provider document is stale; using it while it is revalidated", metadata: ["document": "\(key)"])
        Task {
            do throws(ProviderError) {
                _ = try await self.fetchAndKeep(
                    stale, key: key, now: now, lifetime: lifetime, storage: storage, read: read, fetch: fetch)
            } catch {
                logger.debug("a stale provider document could not be revalidated", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The headers that ask whether `document` changed (RFC 9110 §13.1).
    static func conditions(_ document: ProviderDocument) -> HTTPFields {
        var headers: HTTPFields = [:]
        if let tag = document.entityTag { headers[.ifNoneMatch] = tag }
        if let modified = document.lastModified { headers[.ifModifiedSince] = modified }
        return headers
    }

    /// How long a claimed revalidation keeps a stale copy counted as fresh.
    static let revalidationClaim: TimeInterval = 30

    /// Where a document is kept: its kind and URL.
    static func key(_ kind: EndpointKind, _ url: URL) -> String { "\(kind.rawValue) \(url.absoluteString)" }
}

extension ProviderDocuments {
    /// The key set at `url`, as ``document(_:at:now:lifetime:newerThan:fetch:)`` keeps it, read
    /// key by key (``KeySet``): what every provider's ID-token checks are given.
    func keySet(at url: URL, now: Date, newerThan: Date?, through wire: ProviderWire) async throws(ProviderError)
        -> JWKSCache.Fetched
    {
        let logger = self.logger
        return try await document(
            .jwks, at: url, now: now, lifetime: OpenIDProvider.keySetLifetime, newerThan: newerThan,
            read: { @Sendable document throws(ProviderError) in
                JWKSCache.Fetched(
                    set: try KeySet.decode(document.body, logger: logger), fetchedAt: document.fetchedAt,
                    expiresAt: document.expiresAt)
            }
        ) { conditions async throws(ProviderError) in try await wire.document(.jwks, url, conditions) }
    }
}

/// How long a document a provider published may be used (RFC 9111 §5.2.2): `no-store` or
/// `no-cache` not at all (`nil`: not kept); `max-age=N` N seconds, at most a day; anything else,
/// `fallback`. A pure value.
package enum DocumentLifetime {
    /// The longest Latchkey keeps a provider's document, whatever the provider says.
    package static let longest: TimeInterval = 86_400

    package static func seconds(_ headers: HTTPFields, fallback: TimeInterval) -> TimeInterval? {
        let directives = headers[values: .cacheControl].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        if directives.contains(where: { $0 == "no-store" || $0 == "no-cache" }) { return nil }
        for directive in directives where directive.hasPrefix("max-age=") {
            guard let seconds = Double(directive.dropFirst("max-age=".count)), seconds.isFinite, seconds >= 0 else {
                continue
            }
            return min(seconds, longest)
        }
        return min(fallback, longest)
    }
}

/// Whether a kept document may be used: while its lifetime lasts; past it, as it is while it is
/// revalidated, for up to that lifetime again (``ProviderDocuments/staleBound`` at most: a claim
/// to revalidate it never stretches the bound); after that, not before it is revalidated. A
/// pure value.
package enum DocumentFreshness: Sendable, Equatable {
    case fresh
    /// Past its lifetime, within the bound; `claimed` when another caller is revalidating it.
    case stale(claimed: Bool)
    case expired

    package init(_ document: ProviderDocument, now: Date) {
        if document.expiresAt > now {
            self = .fresh
            return
        }
        let bound = min(document.expiresAt.timeIntervalSince(document.fetchedAt), ProviderDocuments.staleBound)
        guard now.timeIntervalSince(document.expiresAt) < bound else {
            self = .expired
            return
        }
        self = .stale(claimed: document.revalidationClaimedUntil.map { $0 > now } ?? false)
    }
}

extension ProviderDocuments {
    /// The longest a document past its lifetime is used while it is revalidated: an hour.
    package static let staleBound: TimeInterval = 3_600
}

extension ProviderWire {
    /// A document's `GET`, with `conditions` (`If-None-Match`, `If-Modified-Since`): its 2xx
    /// answer, or a `304 Not Modified`; anything else is the provider's refusal.
    func document(_ kind: EndpointKind, _ url: URL, _ conditions: HTTPFields) async throws(ProviderError)
        -> HTTPTransportResponse
    {
        var request = try ProviderRequest.get(kind, url)
        for field in conditions { request.http.headerFields[field.name] = field.value }
        let answer = try await send(request)
        guard (200..<300).contains(answer.response.status.code) || answer.response.status == .notModified else {
            throw refusal(request, answer, clock.date)
        }
        return answer
    }
}
