public import Latchkey
import PostgresNIO

/// The DPoP nonces of every instance sharing the database, as rows of `latchkey_setting`,
/// ordered by `written` (a sequence drawn again at every write).
extension PostgresCredentialStorage: DPoPNonceStorage {
    public func dpopNonce(for server: String) async throws(StorageError) -> String? {
        var found: String?
        for row in try await rows("SELECT value FROM latchkey_setting WHERE name = \("dpop-nonce " + server)") {
            found = (try? row.decode(ByteBuffer.self)).map { String(buffer: $0) }
        }
        return found
    }

    public func setDPoPNonce(_ nonce: String, for server: String) async throws(StorageError) {
        try await execute(
            """
            INSERT INTO latchkey_setting (name, value) VALUES (\("dpop-nonce " + server), \(ByteBuffer(string: nonce)))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, written = nextval('latchkey_setting_written_seq')
            """, doing: "storing a DPoP nonce")
        // Beyond the limit, the rows recorded longest ago go.
        try await execute(
            """
            DELETE FROM latchkey_setting WHERE name LIKE 'dpop-nonce %' AND written <= (
                SELECT written FROM latchkey_setting WHERE name LIKE 'dpop-nonce %'
                ORDER BY written DESC LIMIT 1 OFFSET \(DPoPNonceLimit.servers))
            """, doing: "forgetting DPoP nonces beyond the limit")
    }
}
