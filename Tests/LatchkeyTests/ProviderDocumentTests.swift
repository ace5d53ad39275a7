import Foundation
import GRDB
import HTTPTypes
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// What providers publish, kept in the store: for how long, and never trusted once edited.
@Suite("Provider documents")
struct ProviderDocumentTests {
    @Test(
        "a document lives as Cache-Control says, at most a day; no-store and no-cache keep it not at all",
        arguments: [
            ([], 3_600.0), (["max-age=120"], 120), (["public, max-age=600"], 600), (["max-age=999999"], 86_400),
            (["no-store"], nil), (["max-age=600, no-cache"], nil), (["max-age=0"], 0), (["max-age=abc"], 3_600),
            (["private", "max-age=30"], 30),
        ] as [([String], Double?)])
    func lifetime(directives: [String], seconds: Double?) {
        var headers = HTTPFields()
        for directive in directives { headers.append(HTTPField(name: .cacheControl, value: directive)) }
        #expect(DocumentLifetime.seconds(headers, fallback: 3_600) == seconds)
    }

    @Test("a SQLite row whose sealed document was moved to another key or edited reads as absent")
    func tampered() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let storage = try await SQLiteCredentialStorage.open(path: path)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let real = ProviderDocument(
            body: Data(#"{"token_endpoint":"https://a.example/token"}"#.utf8), fetchedAt: now,
            expiresAt: now.addingTimeInterval(3_600))
        let other = ProviderDocument(
            body: Data(#"{"token_endpoint":"https://evil.example/token"}"#.utf8), fetchedAt: now,
            expiresAt: now.addingTimeInterval(3_600))
        try await storage.setProviderDocument(real, for: "discovery https://a.example")
        try await storage.setProviderDocument(other, for: "discovery https://evil.example")
        #expect(try await storage.providerDocument(for: "discovery https://a.example") == real)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            let moved = try Data.fetchOne(
                db, sql: "SELECT value FROM setting WHERE name = 'provider-document discovery https://evil.example'")
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = 'provider-document discovery https://a.example'",
                arguments: [moved])
        }
        #expect(try await storage.providerDocument(for: "discovery https://a.example") == nil)
        try await queue.write { db in
            try db.execute(
                sql: "UPDATE setting SET value = x'00' WHERE name = 'provider-document discovery https://evil.example'")
        }
        #expect(try await storage.providerDocument(for: "discovery https://evil.example") == nil)
        try queue.close()
    }
}
