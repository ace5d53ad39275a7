package import Foundation
package import Latchkey

/// The credentials an instance last read for `accessToken()`, kept while the change log says
/// nothing changed, so that a valid token is handed out without a round trip. A pure value:
/// the storage feeds it the log's polls and its own writes.
///
/// What bounds its staleness is the log: a change committed on any instance is in the log, and
/// a poll that starts after the commit sees it. So a credential is served only while a poll
/// that started at most ``staleness`` ago has completed (``polled(startedAt:)``): a change made
/// elsewhere stops being served within ``staleness``, and when the feed cannot read the log
/// (the server is unreachable, the connection dropped) nothing is served once that time has
/// passed. A change of this instance's own empties the cache before and after its write
/// (``wrote()``), so it is never served stale here.
///
/// A read that began before a change must not keep what it read after it: a read takes the
/// ``epoch`` when it starts, and what it read is kept only if nothing changed since.
package struct PostgresReadCache: Sendable {
    /// How old the start of the last completed poll may be for the cache to serve.
    package static let staleness = Duration.seconds(1)

    /// Moves with every change seen or made.
    package private(set) var epoch: UInt64 = 0
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// When the last poll that completed had started.
    private var freshAsOf: ContinuousClock.Instant?

    /// An empty cache, serving nothing until a poll completes.
    package init() {}

    /// What a completed poll of the log found: the credentials it names as changed (`nil`: one
    /// it does not name), whether the log no longer held everything since the last poll, and
    /// whether it was the reader's first, which starts at the log's end and so reads none of
    /// the changes made before it: what was kept before then is dropped.
    package mutating func apply(
        changed ids: [CredentialID?], missed: Bool, first: Bool, startedAt start: ContinuousClock.Instant
    ) {
        if first || missed { changed([nil]) }
        changed(ids)
        polled(startedAt: start)
    }

    /// A poll of the log that started at `start` completed (its changes were given to
    /// ``changed(_:)`` before).
    package mutating func polled(startedAt start: ContinuousClock.Instant) {
        if freshAsOf.map({ $0 < start }) ?? true { freshAsOf = start }
    }

    /// The log named changes to these credentials (`nil`: to something it does not name).
    package mutating func changed(_ ids: [CredentialID?]) {
        guard !ids.isEmpty else { return }
        epoch &+= 1
        for id in ids {
            guard let id else { return credentials.removeAll(keepingCapacity: true) }
            credentials[id] = nil
        }
    }

    /// This instance changes a credential (called before the write starts and after it ends).
    package mutating func wrote() {
        epoch &+= 1
        credentials.removeAll(keepingCapacity: true)
    }

    /// The feed cannot read the log: nothing is served until a poll completes again.
    package mutating func lostFeed() {
        freshAsOf = nil
        epoch &+= 1
        credentials.removeAll(keepingCapacity: true)
    }

    /// Whether the cache may serve at `now`.
    package func isFresh(at now: ContinuousClock.Instant) -> Bool {
        guard let freshAsOf else { return false }
        return freshAsOf.duration(to: now) <= Self.staleness
    }

    /// The access token of credential `id` that can be handed out at `date` as it is, if the
    /// cache holds it and may serve at `now`.
    package func accessToken(
        _ id: CredentialID, minimumValidity: TimeInterval, at date: Date, now: ContinuousClock.Instant
    ) -> String? {
        guard isFresh(at: now) else { return nil }
        return credentials[id]?.accessToken(minimumValidity: minimumValidity, at: date)
    }

    /// Keeps `credential`, read by a read that started at `epoch`, unless something changed since.
    package mutating func keep(_ credential: StoredCredential, readAt epoch: UInt64) {
        guard epoch == self.epoch else { return }
        credentials[credential.id] = credential
    }

    /// Forgets credential `id` (a read found none).
    package mutating func forget(_ id: CredentialID) {
        credentials[id] = nil
    }
}
