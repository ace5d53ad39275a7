import Foundation
import GRDB
public import Latchkey

/// What providers published, for every process sharing the file: rows of the `setting` table,
/// each sealed with the store's key and bound to its name, so that an edited one reads as
/// absent (and is fetched again) instead of redirecting a refresh or trusting another key.
extension SQLiteCredentialStorage: ProviderDocumentStorage {
    public func providerDocument(for key: String) async throws(StorageError) -> ProviderDocument? {
        let name = Self.providerDocumentSetting(key)
        return try await read { db, sealer in
            try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name]).flatMap {
                ProviderDocument(sealed: $0, for: key, sealer: sealer)
            }
        }
    }

    public func setProviderDocument(_ document: ProviderDocument, for key: String) async throws(StorageError) {
        let name = Self.providerDocumentSetting(key)
        try await write { db, sealer in
            try db.execute(
                sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)",
                arguments: [name, try document.sealed(with: sealer, for: key)])
        }
    }

    public func removeProviderDocuments() async throws(StorageError) {
        try await write { db, _ in
            try db.execute(
                sql: "DELETE FROM setting WHERE name LIKE ?", arguments: [Self.providerDocumentSetting("") + "%"])
        }
    }

    private static func providerDocumentSetting(_ key: String) -> String { "provider-document " + key }
}
