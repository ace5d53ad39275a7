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
    package func document<Read: Sendable>(
        _ kind: EndpointKind, at url: URL, now: Date, lifetime: TimeInterval, newerThan: Date? = nil,
        read: (ProviderDocument) throws(ProviderError) -> Read,
        fetch: () async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> Read {
        let key = Self.key(kind, url)
        let storage = StorageCapabilities.current.providerDocuments
        if let storage {
            do {
                if let stored = try await storage.providerDocument(for: key), stored.expiresAt > now,
                    newerThan.map({ stored.fetchedAt > $0 }) ?? true
                {
                    do throws(ProviderError) {
                        return try read(stored)
                    } catch {
                        logger.debug("the store's copy of a provider document fails its checks; fetching it again")
                    }
                }
            } catch {
                logger.debug("the store's copy of a provider document cannot be read", metadata: ["error": "\(error)"])
            }
        }
        let answer = try await fetch()
        let kept = DocumentLifetime.seconds(answer.response.headerFields, fallback: lifetime)
        let document = ProviderDocument(body: answer.body, fetchedAt: now, expiresAt: now.addingTimeInterval(kept ?? 0))
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
            read: { document throws(ProviderError) in
                JWKSCache.Fetched(
                    set: try KeySet.decode(document.body, logger: logger), fetchedAt: document.fetchedAt,
                    expiresAt: document.expiresAt)
            }
        ) { () async throws(ProviderError) in try await wire.exchange(.get(.jwks, url)) }
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
