import Foundation
import Latchkey
import LatchkeySQLiteReader

/// The credentials this process last read by id, kept while the database is as it was when
/// they were read, so that reading a credential again opens no seal (`accessToken()` on a
/// valid token, many times a second).
///
/// "As it was" is two numbers: the store's change counter (`PRAGMA data_version` on a
/// connection of its own, ``SQLiteChangeCounter``), which moves whenever any other connection
/// commits — another process, another store on the same file, or this storage's own
/// connection; and this storage's own writes, which it counts before each one starts, so that
/// nothing is taken from the cache while a write of its own is under way. Either number moving
/// empties the cache. A key rotation, a refresh, a revocation or a sign-out in another process
/// is a commit like any other: the next read after it is visible reads the row again.
struct CredentialReadCache: Sendable {
    /// What the cached rows were read under.
    struct Stamp: Equatable, Sendable {
        var counter: SQLiteChangeCounter.Value
        var writes: UInt64
    }

    private var writes: UInt64 = 0
    private var current: Stamp?
    private var credentials: [CredentialID: StoredCredential] = [:]
    /// The credential kept last, beside the table: the one a process asks for again and again
    /// is found by comparing its id, not by hashing it.
    private var last: StoredCredential?
    /// Every account's summary, when listed under the current stamp.
    private var accounts: [AccountSummary]?
    /// The default account's id, when read under the current stamp (`.some(nil)`: none is set).
    private var defaultID: CredentialID??

    /// Counts a write of this storage's own (before it runs).
    mutating func wrote() {
        writes &+= 1
        empty()
    }

    private mutating func empty() {
        credentials.removeAll(keepingCapacity: true)
        last = nil
        accounts = nil
        defaultID = nil
        current = nil
    }

    /// Whether what is kept was read under the stamp a read at `counter` would have;
    /// everything is dropped when not.
    private mutating func isCurrent(counter: SQLiteChangeCounter.Value) -> Bool {
        guard let current, current == stamp(counter: counter) else {
            empty()
            return false
        }
        return true
    }

    /// The summaries listed under the current stamp, if it is still current at `counter`.
    mutating func accounts(counter: SQLiteChangeCounter.Value) -> [AccountSummary]? {
        isCurrent(counter: counter) ? accounts : nil
    }

    /// Keeps the summaries, listed under `stamp`, unless something was written since.
    mutating func keep(accounts listed: [AccountSummary], stamp: Stamp) {
        guard adopt(stamp) else { return }
        accounts = listed
    }

    /// The default account's id read under the current stamp, if it is still current at
    /// `counter` (`.some(nil)`: none is set; `nil`: not kept).
    mutating func defaultID(counter: SQLiteChangeCounter.Value) -> CredentialID?? {
        isCurrent(counter: counter) ? defaultID : nil
    }

    /// Keeps the default account's id, read under `stamp`, unless something was written since.
    mutating func keep(defaultID id: CredentialID?, stamp: Stamp) {
        guard adopt(stamp) else { return }
        defaultID = .some(id)
    }

    /// Makes `stamp` the current one (dropping what was kept under another); false when this
    /// storage wrote since the read under it began.
    private mutating func adopt(_ stamp: Stamp) -> Bool {
        guard stamp.writes == writes else { return false }
        if current != stamp {
            empty()
            current = stamp
        }
        return true
    }

    /// The stamp a read that starts now, at `counter`, is made under.
    func stamp(counter: SQLiteChangeCounter.Value) -> Stamp { Stamp(counter: counter, writes: writes) }

    /// The credential read under the current stamp, if it is still current at `counter`.
    mutating func credential(_ id: CredentialID, counter: SQLiteChangeCounter.Value) -> StoredCredential? {
        isCurrent(counter: counter) ? credentials[id] : nil
    }

    /// The access token of the credential read under the current stamp, if that is still
    /// current at `counter` and the token can be handed out at `date` (the record is not copied).
    mutating func accessToken(
        _ id: CredentialID, counter: SQLiteChangeCounter.Value, minimumValidity: TimeInterval, at date: Date
    ) -> String? {
        guard isCurrent(counter: counter) else { return nil }
        if let last, last.id == id { return last.accessToken(minimumValidity: minimumValidity, at: date) }
        return credentials[id]?.accessToken(minimumValidity: minimumValidity, at: date)
    }

    /// Keeps `credential`, read under `stamp`, unless something was written since.
    mutating func keep(_ credential: StoredCredential, stamp: Stamp) {
        guard adopt(stamp) else { return }
        credentials[credential.id] = credential
        last = credential
    }
}
