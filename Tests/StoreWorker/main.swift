// A helper process for the store's multi-process tests. Not part of the product.
//
//   latchkey-store-worker PATH COUNT LABEL
//       Opens the SQLite store at PATH and adds COUNT credentials (COUNT 0: until killed), each
//       followed by a revocation outbox entry, printing "committed ID" and "queued ID" on
//       standard output after each write has committed.
//   latchkey-store-worker lease PATH ID COUNT
//       Takes the refresh lease of credential ID COUNT times, printing "enter T" and "leave T"
//       (seconds since 1970) around 20 ms of holding it, and adds a tag of its own each time
//       through a compare-and-swap update.
//   latchkey-store-worker hold PATH ID [SECONDS]
//       Takes the refresh lease of credential ID (a lease of SECONDS, 600 by default), prints
//       "holding", and holds it until killed.
//   latchkey-store-worker refresh PATH ISSUER ID SECONDS
//       Refreshes credential ID (the public client `latchkey-cli` of the provider at ISSUER)
//       under a lease of SECONDS, and prints "refreshed" or "error E".
//   latchkey-store-worker watch PATH ID
//       For every line on standard input, asks credential ID for its access token (valid: no
//       provider is asked) and prints "token T", "gone" when the credential was removed, or
//       "error E"; it ends with standard input.
//   latchkey-store-worker claim PATH KEY
//       Opens the store at PATH, prints "ready", and at the first line on standard input claims
//       the revalidation of the provider document under KEY (stale for 30 s by then), printing
//       "won" or "lost".
//   latchkey-store-worker dpop PATH ISSUER CLIENT SECRET ID CALLS
//       Gets credential ID's access token (DPoP-bound; a refresh when it is marked rejected),
//       then calls userinfo CALLS times; prints "refreshes R calls C failed F nonce-failures N
//       most-challenges M" (N: calls whose retry met a second nonce challenge; M: the most nonce
//       challenges one call met).
import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeySQLite

let arguments = CommandLine.arguments

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
    exit(2)
}

func say(_ line: String) { FileHandle.standardOutput.write(Data("\(line)\n".utf8)) }

do {
    switch arguments.dropFirst().first {
    case "lease":
        guard arguments.count == 5, let count = Int(arguments[4]) else {
            fail("usage: latchkey-store-worker lease PATH ID COUNT")
        }
        let store = try await CredentialStore.sqlite(at: arguments[2])
        let id = CredentialID(rawValue: arguments[3])
        let label = "\(getpid())"
        for round in 0..<count {
            try await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(30))) { _ in
                say("enter \(Date().timeIntervalSince1970)")
                try? await Task.sleep(for: .milliseconds(20))
                say("leave \(Date().timeIntervalSince1970)")
            }
            try await store.update(id) { $0.metadata.tags["\(label)-\(round)"] = "x" }
        }
    case "refresh":
        guard arguments.count == 6, let issuer = URL(string: arguments[3]), let seconds = Double(arguments[5]) else {
            fail("usage: latchkey-store-worker refresh PATH ISSUER ID SECONDS")
        }
        let storage = try await SQLiteCredentialStorage.open(path: arguments[2])
        let store = CredentialStore(storage: storage, leaseDuration: .milliseconds(Int64(seconds * 1000)))
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: "latchkey-cli"),
            transport: AsyncHTTPClientTransport.shared)
        let credential = await provider.credential(CredentialID(rawValue: arguments[4]), in: store)
        do {
            _ = try await credential.refresh()
            say("refreshed")
        } catch {
            say("error \(error)")
        }
    case "claim":
        guard arguments.count == 4 else { fail("usage: latchkey-store-worker claim PATH KEY") }
        let storage = try await SQLiteCredentialStorage.open(path: arguments[2])
        say("ready")
        _ = readLine()
        guard let stored = try await storage.providerDocument(for: arguments[3]) else { fail("no document") }
        let now = stored.expiresAt.addingTimeInterval(30)
        let won = try await storage.claimProviderDocumentRevalidation(
            for: arguments[3], fetchedAt: stored.fetchedAt, now: now, until: now.addingTimeInterval(30))
        say(won ? "won" : "lost")
    case "dpop":
        try await DPoPWorker.run(Array(arguments.dropFirst(2)))
    case "watch":
        guard arguments.count == 4, let issuer = URL(string: "https://issuer.example") else {
            fail("usage: latchkey-store-worker watch PATH ID")
        }
        let store = try await CredentialStore.sqlite(at: arguments[2])
        // Never asked: the tokens the test stores are valid for an hour.
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: "worker"),
            transport: AsyncHTTPClientTransport.shared)
        let credential = await store.credential(CredentialID(rawValue: arguments[3]), provider: provider)
        while readLine() != nil {
            do {
                say("token \(try await credential.accessToken())")
            } catch  where (error.underlying as? StorageError)?.code == .credentialNotFound {
                say("gone")
            } catch {
                say("error \(error)")
            }
        }
    case "hold":
        guard arguments.count == 4 || arguments.count == 5 else {
            fail("usage: latchkey-store-worker hold PATH ID [SECONDS]")
        }
        let store = try await CredentialStore.sqlite(at: arguments[2])
        let id = CredentialID(rawValue: arguments[3])
        let seconds = arguments.count == 5 ? Double(arguments[4]) ?? 600 : 600
        try await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(seconds))) { _ in
            say("holding")
            while true { try? await Task.sleep(for: .seconds(60)) }
        }
    default:
        guard arguments.count == 4, let count = Int(arguments[2]) else {
            fail("usage: latchkey-store-worker PATH COUNT LABEL")
        }
        let label = arguments[3]
        let store = try await CredentialStore.sqlite(at: arguments[1])
        var index = 0
        while count == 0 || index < count {
            let token = Token(
                accessToken: "at-\(label)-\(index)", refreshToken: "rt-\(label)-\(index)",
                issuedAt: Date(), expiresAt: Date().addingTimeInterval(3600),
                provider: ProviderIdentity(issuer: "https://issuer.example", clientID: "worker"))
            let credential = try await store.add(token, tags: ["worker": label, "index": "\(index)"])
            say("committed \(credential.id)")
            // An outbox entry too, so the tests can check that queued revocations survive as well.
            let entry = OutboxEntry(
                provider: token.provider, action: .revoke(.refreshToken), payload: .token("rt-\(label)-\(index)"),
                account: label,
                tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(), lastError: nil)
            try await store.outbox.enqueue([entry], limit: .max)
            say("queued \(entry.id.uuidString)")
            index += 1
        }
    }
} catch {
    FileHandle.standardError.write(Data("worker failed: \(error)\n".utf8))
    exit(1)
}
