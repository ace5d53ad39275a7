public import Foundation
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

    /// Decided in one `IMMEDIATE` write transaction: no other process writes the row between
    /// the read and the claim.
    public func claimProviderDocumentRevalidation(for key: String, fetchedAt: Date, now: Date, until: Date)
        async throws(StorageError) -> Bool
    {
        let name = Self.providerDocumentSetting(key)
        return try await write { db, sealer in
            guard
                let claimed = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name])
                    .flatMap({ ProviderDocument(sealed: $0, for: key, sealer: sealer) })?
                    .claimingRevalidation(fetchedAt: fetchedAt, now: now, until: until)
            else { return false }
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = ?",
                arguments: [try claimed.sealed(with: sealer, for: key), name])
            return true
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
