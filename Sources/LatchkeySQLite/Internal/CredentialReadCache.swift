import Latchkey

/// The credentials this process last read by id, kept while the database is as it was when
/// they were read, so that reading a credential again opens no seal (`accessToken()` on a
/// valid token, many times a second).
///
/// "As it was" is two numbers: SQLite's `PRAGMA data_version`, which changes on the
/// connection that asks whenever another connection (another process, another store on the
/// same file) committed; and this storage's own writes, which it counts, since its own commits
/// leave `data_version` unchanged. Either number moving empties the cache. A key rotation, a
/// refresh, a revocation or a sign-out in another process is a commit like any other: the next
/// read after it is visible reads the row again.
struct CredentialReadCache: Sendable {
    /// What the cached rows were read under.
    struct Stamp: Equatable, Sendable {
        var dataVersion: Int64
        var writes: UInt64
    }

    private var writes: UInt64 = 0
    private var current: Stamp?
    private var credentials: [CredentialID: StoredCredential] = [:]

    /// Counts a write of this storage's own (before it runs).
    mutating func wrote() {
        writes &+= 1
        credentials.removeAll(keepingCapacity: true)
        current = nil
    }

    /// The stamp a read that starts now, at `dataVersion`, is made under.
    func stamp(dataVersion: Int64) -> Stamp { Stamp(dataVersion: dataVersion, writes: writes) }

    /// The credential read under the current stamp, if it is still current at `dataVersion`.
    mutating func credential(_ id: CredentialID, dataVersion: Int64) -> StoredCredential? {
        guard let current, current == stamp(dataVersion: dataVersion) else {
            credentials.removeAll(keepingCapacity: true)
            self.current = nil
            return nil
        }
        return credentials[id]
    }

    /// Keeps `credential`, read under `stamp`, unless something was written since.
    mutating func keep(_ credential: StoredCredential, stamp: Stamp) {
        guard stamp.writes == writes else { return }
        if current != stamp {
            credentials.removeAll(keepingCapacity: true)
            current = stamp
        }
        credentials[credential.id] = credential
    }
}
