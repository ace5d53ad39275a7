import Foundation
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

    public func removeProviderDocuments() async throws(StorageError) {
        try await execute(
            "DELETE FROM latchkey_setting WHERE name LIKE \(Self.providerDocumentSetting("") + "%")",
            doing: "forgetting provider documents")
    }

    private static func providerDocumentSetting(_ key: String) -> String { "provider-document " + key }
}
