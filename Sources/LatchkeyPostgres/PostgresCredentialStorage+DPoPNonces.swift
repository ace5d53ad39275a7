public import Latchkey
import PostgresNIO

/// The DPoP nonces of every instance sharing the database, as rows of `latchkey_setting`.
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
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """, doing: "storing a DPoP nonce")
    }
}
