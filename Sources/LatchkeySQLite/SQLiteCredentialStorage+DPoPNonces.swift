import GRDB
public import Latchkey

/// The DPoP nonces of every process sharing the file, as rows of its `setting` table: a
/// replaced row takes a new rowid, so the rowids order them by when they were recorded.
extension SQLiteCredentialStorage: DPoPNonceStorage {
    public func dpopNonce(for server: String) async throws(StorageError) -> String? {
        try await read { db, _ in
            try String.fetchOne(
                db, sql: "SELECT value FROM setting WHERE name = ?", arguments: ["dpop-nonce " + server])
        }
    }

    public func setDPoPNonce(_ nonce: String, for server: String) async throws(StorageError) {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)",
                arguments: ["dpop-nonce " + server, nonce])
            // Beyond the limit, the rows recorded longest ago go.
            try db.execute(
                sql: """
                    DELETE FROM setting WHERE name >= 'dpop-nonce ' AND name < 'dpop-nonce!' AND rowid <= (
                        SELECT rowid FROM setting WHERE name >= 'dpop-nonce ' AND name < 'dpop-nonce!'
                        ORDER BY rowid DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [DPoPNonceLimit.servers])
        }
    }
}
