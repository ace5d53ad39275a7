import GRDB
public import Latchkey

/// The DPoP nonces of every process sharing the file, as rows of its `setting` table.
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
        }
    }
}
