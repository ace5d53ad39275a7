// A helper process for the store's multi-process tests. Not part of the product.
//
//   latchkey-store-worker PATH COUNT LABEL
//
// Opens the SQLite store at PATH and adds COUNT credentials (COUNT 0: until killed), each
// followed by a revocation outbox entry, printing "committed ID" and "queued ID" on standard
// output after each write has committed.
import Foundation
import Latchkey
import LatchkeySQLite

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: latchkey-store-worker PATH COUNT LABEL\n".utf8))
    exit(2)
}
let label = arguments[3]
do {
    let store = try await CredentialStore.sqlite(at: arguments[1])
    var index = 0
    while count == 0 || index < count {
        let token = Token(
            accessToken: "at-\(label)-\(index)", refreshToken: "rt-\(label)-\(index)",
            issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600),
            provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "worker"))
        let credential = try await store.add(token, tags: ["worker": label, "index": "\(index)"])
        FileHandle.standardOutput.write(Data("committed \(credential.id)\n".utf8))
        // An outbox entry too, so the tests can check that queued revocations survive as well.
        let entry = OutboxEntry(
            provider: token.provider, kind: .refreshToken, token: "rt-\(label)-\(index)", account: label,
            tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(), lastError: nil)
        try await store.storage.enqueue(entry)
        FileHandle.standardOutput.write(Data("queued \(entry.id.uuidString)\n".utf8))
        index += 1
    }
} catch {
    FileHandle.standardError.write(Data("worker failed: \(error)\n".utf8))
    exit(1)
}
