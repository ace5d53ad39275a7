package import Foundation
package import Latchkey
import PostgresNIO

/// What the command-line tool keeps beside the credentials in a PostgreSQL store, so that every
/// instance sees it: its provider list, and the client secrets in it sealed with the store's key.
/// Package-only: the tool's needs, not the library's promise.
extension PostgresCredentialStorage {
    /// Seals `secret` (a client secret, say) with the store's key, for `purpose`, as base64.
    package func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try sealer.seal(secret: secret, purpose: purpose)
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for `purpose`; `nil` when it does not open.
    package func open(sealedSecret: String, purpose: String) -> String? {
        sealer.open(sealedSecret: sealedSecret, purpose: purpose)
    }

    /// A document stored under `name`, or `nil`. Not sealed: seal its secrets with
    /// ``seal(secret:purpose:)``.
    package func document(named name: String) async throws(StorageError) -> Data? {
        var found: Data?
        for row in try await rows("SELECT value FROM latchkey_setting WHERE name = \("document:" + name)") {
            found = try? row.decode(Data.self)
        }
        return found
    }

    /// Stores `data` as the document `name`, replacing the one there.
    package func setDocument(_ data: Data, named name: String) async throws(StorageError) {
        try await execute(
            """
            INSERT INTO latchkey_setting (name, value) VALUES (\("document:" + name), \(data))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """, doing: "storing a document")
    }
}
