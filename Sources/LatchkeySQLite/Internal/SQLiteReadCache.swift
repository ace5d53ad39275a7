import Latchkey
import LatchkeySQLiteReader

/// The core read cache (``CredentialReadCache``) over SQLite's change stamp: the store's change
/// counter (`PRAGMA data_version` on a connection of its own, ``SQLiteChangeCounter``), which
/// moves whenever any other connection commits — another process, another store on the same
/// file, or this storage's own connection. A counter other than the one last seen is a change
/// the cache is told of; this storage's own writes are told before each one starts, so that
/// nothing is taken from the cache while one is under way. A key rotation, a refresh, a
/// revocation or a sign-out in another process is a commit like any other: the next read after
/// it is visible reads the row again.
struct SQLiteReadCache: Sendable {
    private(set) var cache = CredentialReadCache()
    private var seen: SQLiteChangeCounter.Value?

    /// What is kept, as of `counter` (emptied when the counter moved since it was last seen),
    /// given to `body`.
    mutating func cached<T>(at counter: SQLiteChangeCounter.Value, _ body: (CredentialReadCache) -> T?) -> T? {
        observe(counter)
        return body(cache)
    }

    /// The epoch a read that starts now, at `counter`, is made under.
    mutating func epoch(at counter: SQLiteChangeCounter.Value) -> UInt64 {
        observe(counter)
        return cache.epoch
    }

    /// Puts what a read found in the cache (which keeps it only if nothing changed since).
    mutating func keep(_ body: (inout CredentialReadCache) -> Void) { body(&cache) }

    /// Counts a write of this storage's own (before it runs).
    mutating func wrote() { cache.wrote() }

    private mutating func observe(_ counter: SQLiteChangeCounter.Value) {
        guard seen != counter else { return }
        cache.changed([nil])
        seen = counter
    }
}
