package import Foundation

/// What a storage last read, kept in memory while its change stamp says nothing changed, so
/// that reading a credential again (`accessToken()` on a valid token, many times a second) opens
/// no seal. One layer for every backend, a pure value: each backend tells it the changes its
/// own stamp reveals — SQLite's change counter, PostgreSQL's change log — and its own writes.
///
/// A read takes the ``epoch`` when it starts and keeps what it read only if the epoch has not
/// moved since: a read that began before a change never keeps what it read.
package struct CredentialReadCache: Sendable {
    /// Moves with every change seen or made.
    package private(set) var epoch: UInt64 = 0
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// The credential kept last, beside the table: the one a process asks for again and again
    /// is found by comparing its id, not by hashing it.
    private var last: StoredCredential?
    /// Every account's summary, when listed since the last change.
    package private(set) var accounts: [AccountSummary]?
    /// The default account's id, when read since the last change (`.some(nil)`: none is set;
    /// `nil`: not kept).
    package private(set) var defaultID: CredentialID??

    /// An empty cache.
    package init() {}

    /// The backend's stamp says these credentials changed; `nil` stands for a change it does
    /// not name, and drops every credential. The account list and the default go with any
    /// change.
    package mutating func changed(_ ids: [CredentialID?]) {
        guard !ids.isEmpty else { return }
        epoch &+= 1
        accounts = nil
        defaultID = nil
        for id in ids {
            guard let id else {
                credentials.removeAll(keepingCapacity: true)
                last = nil
                return
            }
            credentials[id] = nil
            if last?.id == id { last = nil }
        }
    }

    /// This storage is about to write, or has written: nothing read before is served or kept.
    package mutating func wrote() { changed([nil]) }

    /// The credential `id`, if kept.
    package func credential(_ id: CredentialID) -> StoredCredential? {
        if let last, last.id == id { return last }
        return credentials[id]
    }

    /// The access token of credential `id`, if kept and it can be handed out at `date` as it is
    /// (the record is not copied).
    package func accessToken(_ id: CredentialID, minimumValidity: TimeInterval, at date: Date) -> String? {
        if let last, last.id == id { return last.accessToken(minimumValidity: minimumValidity, at: date) }
        return credentials[id]?.accessToken(minimumValidity: minimumValidity, at: date)
    }

    /// Keeps `credential`, read by a read that started at `epoch`, unless something changed since.
    package mutating func keep(_ credential: StoredCredential, readAt epoch: UInt64) {
        guard epoch == self.epoch else { return }
        credentials[credential.id] = credential
        last = credential
    }

    /// Keeps the summaries, listed by a read that started at `epoch`, unless something changed
    /// since.
    package mutating func keep(accounts listed: [AccountSummary], readAt epoch: UInt64) {
        guard epoch == self.epoch else { return }
        accounts = listed
    }

    /// Keeps the default account's id, read by a read that started at `epoch`, unless something
    /// changed since.
    package mutating func keep(defaultID id: CredentialID?, readAt epoch: UInt64) {
        guard epoch == self.epoch else { return }
        defaultID = .some(id)
    }

    /// Forgets credential `id`: a read found none.
    package mutating func forget(_ id: CredentialID) {
        credentials[id] = nil
        if last?.id == id { last = nil }
    }
}
