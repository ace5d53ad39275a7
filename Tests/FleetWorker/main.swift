// An instance of a fleet, for the PostgreSQL store's multi-process tests. Not part of the product.
// The store is at $LATCHKEY_DATABASE_URL, sealed with the key in $LATCHKEY_KEY_FILE.
//
//   latchkey-fleet-worker migrate
//       Opens the store (creating or migrating its schema) and prints "migrated".
//   latchkey-fleet-worker tokens ISSUER ID COUNT
//       Prints "ready", waits for a line on standard input, then asks credential ID for its
//       access token COUNT times at once; prints "tokens COUNT distinct D".
//   latchkey-fleet-worker drain ISSUER CLAIM_SECONDS [STALL_AFTER]
//       Drains the outbox until it is empty; prints "revoked N". With STALL_AFTER, the
//       revocation requests after the first STALL_AFTER never end (an instance that hangs in
//       the middle of its batch, to be killed): it prints "stalled" when the first one hangs.
//   latchkey-fleet-worker hold ID
//       Takes credential ID's lease, prints "holding", and keeps it until killed.
//   latchkey-fleet-worker watch
//       Prints "listening", then one line per change another instance makes:
//       "event KIND ID SECONDS-SINCE-1970".
import Crypto
import Foundation
import HTTPTypes
import Latchkey
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeySQLite
import NIOConcurrencyHelpers
import PostgresNIO

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
    exit(2)
}

func say(_ line: String) { FileHandle.standardOutput.write(Data("\(line)\n".utf8)) }

/// A transport that lets the first `limit` revocation requests through and holds every later
/// one forever.
final class StallingTransport: HTTPTransport {
    let inner: any HTTPTransport
    let limit: Int
    let sent = NIOLockedValueBox(0)

    init(inner: any HTTPTransport, limit: Int) {
        self.inner = inner
        self.limit = limit
    }

    func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
        -> HTTPTransportResponse
    {
        if request.path?.contains("revoke") == true {
            let count = sent.withLockedValue { count in
                count += 1
                return count
            }
            if count > limit {
                if count == limit + 1 { say("stalled") }
                while true { try? await Task.sleep(for: .seconds(3_600)) }
            }
        }
        return try await inner.send(request, body: body, options: options)
    }
}

func openStore(_ client: PostgresClient, leaseDuration: Duration = .seconds(60)) async throws -> CredentialStore {
    guard let keyFile = ProcessInfo.processInfo.environment["LATCHKEY_KEY_FILE"] else {
        fail("LATCHKEY_KEY_FILE is not set")
    }
    // Stretched with the tests' other timeouts under the thread sanitizer.
    let slowdown = ProcessInfo.processInfo.environment["LATCHKEY_TEST_SLOWDOWN"].flatMap(Double.init) ?? 1
    let storage = try await PostgresCredentialStorage.open(
        client: client, key: StoreKey.read(fromFile: keyFile), timeout: .seconds(60 * slowdown))
    return CredentialStore(storage: storage, leaseDuration: leaseDuration)
}

func provider(_ issuer: String, transport: any HTTPTransport = AsyncHTTPClientTransport.shared) -> OpenIDProvider {
    guard let url = URL(string: issuer) else { fail("not an issuer URL: \(issuer)") }
    return OpenIDProvider(
        configuration: OpenIDProviderConfiguration(issuer: url, clientID: "latchkey-cli"), transport: transport)
}

guard let url = ProcessInfo.processInfo.environment["LATCHKEY_DATABASE_URL"] else {
    fail("LATCHKEY_DATABASE_URL is not set")
}
let client: PostgresClient
do {
    client = PostgresClient(configuration: try PostgresCredentialStorage.clientConfiguration(url: url))
} catch {
    fail("\(error)")
}
let running = Task { await client.run() }

do {
    switch arguments.first {
    case "migrate":
        _ = try await openStore(client)
        say("migrated")
    case "tokens":
        guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: tokens ISSUER ID COUNT") }
        let store = try await openStore(client)
        let credential = await store.credential(CredentialID(rawValue: arguments[2]), provider: provider(arguments[1]))
        say("ready")
        _ = readLine()
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<count { group.addTask { try await credential.accessToken() } }
            var tokens: [String] = []
            for try await token in group { tokens.append(token) }
            return tokens
        }
        say("tokens \(tokens.count) distinct \(Set(tokens).count)")
    case "drain":
        guard arguments.count >= 3, let claim = Int(arguments[2]) else {
            fail("usage: drain ISSUER CLAIM_SECONDS [STALL_AFTER]")
        }
        // The claims a drain makes last the store's lease.
        let store = try await openStore(client, leaseDuration: .seconds(claim))
        let transport: any HTTPTransport =
            arguments.count > 3
            ? StallingTransport(inner: AsyncHTTPClientTransport.shared, limit: Int(arguments[3]) ?? 0)
            : AsyncHTTPClientTransport.shared
        await store.register(provider(arguments[1], transport: transport))
        var revoked = 0
        while try await !store.outboxEntries().isEmpty {
            let report = await store.drainOutbox(DrainOptions())
            if let error = report.storageError { throw error }
            guard report.failed == 0, report.permanent == 0 else { fail("revocations failed: \(report)") }
            revoked += report.revoked
            // Entries other instances hold: wait for them to finish, or for their claims to run out.
            if report.revoked == 0 { try await Task.sleep(for: .milliseconds(200)) }
        }
        say("revoked \(revoked)")
    case "hold":
        guard arguments.count == 2 else { fail("usage: hold ID") }
        let store = try await openStore(client)
        let id = CredentialID(rawValue: arguments[1])
        _ = try await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(3_600))) { _ in
            say("holding")
            while true { try? await Task.sleep(for: .seconds(3_600)) }
        }
    case "watch":
        let store = try await openStore(client)
        let changes = store.changes
        say("listening")
        for await event in changes {
            let time = Date().timeIntervalSince1970
            switch event {
            case .added(let id): say("event added \(id) \(time)")
            case .updated(let id): say("event updated \(id) \(time)")
            case .removed(let id): say("event removed \(id) \(time)")
            case .defaultChanged(let id): say("event default \(id?.rawValue ?? "none") \(time)")
            case .changesMayHaveBeenMissed: say("event missed - \(time)")
            }
        }
    default:
        fail("usage: latchkey-fleet-worker migrate | tokens | drain | hold | watch")
    }
} catch {
    FileHandle.standardError.write(Data("worker failed: \(error)\n".utf8))
    exit(1)
}
running.cancel()
exit(0)
