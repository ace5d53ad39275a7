public import Foundation
public import Latchkey
import PostgresNIO

/// What providers published, for every instance sharing the database: rows of
/// `latchkey_setting`, each sealed with the store's key and bound to its name, so that an edited
/// one reads as absent (and is fetched again).
extension PostgresCredentialStorage: ProviderDocumentStorage {
    public func providerDocument(for key: String) async throws(StorageError) -> ProviderDocument? {
        var found: ProviderDocument?
        for row in try await rows(
            "SELECT value FROM latchkey_setting WHERE name = \(Self.providerDocumentSetting(key))")
        {
            found = (try? row.decode(Data.self)).flatMap { ProviderDocument(sealed: $0, for: key, sealer: sealer) }
        }
        return found
    }

    public func setProviderDocument(_ document: ProviderDocument, for key: String) async throws(StorageError) {
        let sealed = try document.sealed(with: sealer, for: key)
        try await execute(
            """
            INSERT INTO latchkey_setting (name, value) VALUES (\(Self.providerDocumentSetting(key)), \(sealed))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """, doing: "storing a provider document")
    }

    /// Decided in one transaction that holds the row (`FOR UPDATE`): no other instance writes
    /// it between the read and the claim.
    public func claimProviderDocumentRevalidation(for key: String, fetchedAt: Date, now: Date, until: Date)
        async throws(StorageError) -> Bool
    {
        let name = Self.providerDocumentSetting(key)
        let sealer = self.sealer
        let logger = self.logger
        return try await transaction("claiming a provider document's revalidation") { connection in
            var sealed: Data?
            // Read to its end: the lock is held only once the answer is complete.
            for try await row in try await connection.query(
                "SELECT value FROM latchkey_setting WHERE name = \(name) FOR UPDATE", logger: logger)
            {
                sealed = try? row.decode(Data.self)
            }
            guard
                let claimed = sealed.flatMap({ ProviderDocument(sealed: $0, for: key, sealer: sealer) })?
                    .claimingRevalidation(fetchedAt: fetchedAt, now: now, until: until)
            else { return false }
            let value = try claimed.sealed(with: sealer, for: key)
            _ = try await Self.count(
                connection.query(
                    "UPDATE latchkey_setting SET value = \(value) WHERE name = \(name)", logger: logger))
            return true
        }
    }

    public func removeProviderDocuments() async throws(StorageError) {
        try await execute(
            "DELETE FROM latchkey_setting WHERE name LIKE \(Self.providerDocumentSetting("") + "%")",
            doing: "forgetting provider documents")
    }

    private static func providerDocumentSetting(_ key: String) -> String { "provider-document " + key }
}
