// latchkey-bench: the figures behind Latchkey's claims. Run it release-built:
//
//   swift run -c release latchkey-bench [--json] [--quick] [--postgres URL [--pgbouncer URL]] [--only SECTION]
//       [--no-baseline]
//
// A figure more than 20 % worse than the one README.md records (its `latchkey-bench figures`
// block) is printed `regressed`, and the run exits 1; `--no-baseline` reports without failing.
//
// With --postgres (or $LATCHKEY_BENCH_POSTGRES_URL), the fleet store's figures too, against that
// server (scripts/providers/postgres start runs one).
//
// Every figure is printed as `name value unit` on its own line (or one JSON document), so a
// script can compare runs. Medians, plus p99 where it says.
import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import LatchkeyStorageTesting
import NIOConcurrencyHelpers

struct Figure: Encodable {
    var name: String
    var value: Double
    var unit: String
}

let arguments = CommandLine.arguments
let asJSON = arguments.contains("--json")
let quick = arguments.contains("--quick")
/// `--only SECTION` (provider, locks, dpop, mcp, hotpath, store, cli, web, postgres, peers): that section alone.
let only = arguments.firstIndex(of: "--only").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
func runs(_ section: String) -> Bool { only == nil || only == section }
var figures: [Figure] = []

@MainActor
func record(_ name: String, _ value: Double, _ unit: String) {
    figures.append(Figure(name: name, value: (value * 100).rounded() / 100, unit: unit))
    if !asJSON { print("\(name) \((value * 100).rounded() / 100) \(unit)") }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
    return sorted[index]
}

func time(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    return milliseconds(ContinuousClock.now - start)
}

let transport = AsyncHTTPClientTransport.shared
let scopes = ["openid", "profile", "email", "offline_access", "device_sso"]

func client(_ dev: DevProvider, clock: any LatchkeyClock = SystemClock()) -> OpenIDProvider {
    OpenIDProvider(
        configuration: OpenIDProviderConfiguration(
            issuer: dev.issuer, clientID: "latchkey-cli", scopes: scopes, allowsPasswordGrant: true),
        transport: transport, clock: clock)
}

// MARK: Sign-out latency, 50 ms added to every request

if runs("provider") {
    // One clock for the provider and the clients, moved forward to expire tokens.
    let clock = OffsetClock()
    // Twenty users, so that twenty sign-ins are twenty accounts (the same user signing in again
    // replaces the tokens of their account).
    var configuration = DevProviderConfiguration.default
    configuration.users = (0..<20).map {
        .init(username: "user\($0)", password: "user\($0)-password", name: "User \($0)", email: "user\($0)@example.com")
    }
    let dev = try await DevProvider.start(configuration: configuration, now: { clock.date })
    let provider = client(dev, clock: clock)
    _ = try await provider.metadata()
    dev.faults.set(.latency(milliseconds: 50))
    var one: [Double] = []
    for _ in 0..<(quick ? 5 : 30) {
        let store = CredentialStore.inMemory()
        await store.register(provider)
        _ = try await provider.signIn(.password(username: "user0", password: "user0-password"), into: store)
        one.append(await time { _ = await store.signOut(.current) })
    }
    record("signout.one_account.median", percentile(one, 0.5), "ms")
    record("signout.one_account.p99", percentile(one, 0.99), "ms")
    var twenty: [Double] = []
    for _ in 0..<(quick ? 2 : 10) {
        let store = CredentialStore.inMemory()
        await store.register(provider)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let user = "user\(index)"
                    _ = try await provider.signIn(.password(username: user, password: "\(user)-password"), into: store)
                }
            }
            try await group.waitForAll()
        }
        twenty.append(await time { _ = await store.signOut(.all) })
    }
    record("signout.twenty_accounts.median", percentile(twenty, 0.5), "ms")
    record("signout.twenty_accounts.p99", percentile(twenty, 0.99), "ms")

    // MARK: Refresh single-flight: 1,000 callers on an expired credential
    let refreshing = client(dev, clock: clock)
    let store = CredentialStore(storage: InMemoryCredentialStorage(), clock: clock)
    let credential = try await refreshing.signIn(.password(username: "user0", password: "user0-password"), into: store)
    clock.advance(3_600)
    dev.faults.resetCounters()
    let waits = try await withThrowingTaskGroup(of: Double.self) { group in
        for _ in 0..<1_000 {
            group.addTask {
                let start = ContinuousClock.now
                _ = try await refreshing.credential(credential.id, in: store).accessToken()
                return milliseconds(ContinuousClock.now - start)
            }
        }
        var waits: [Double] = []
        for try await wait in group { waits.append(wait) }
        return waits
    }
    record("refresh.single_flight.requests", Double(dev.faults.count("token.refresh_token")), "count")
    record("refresh.single_flight.caller_latency.median", percentile(waits, 0.5), "ms")
    record("refresh.single_flight.caller_latency.p99", percentile(waits, 0.99), "ms")

    // MARK: Store operations per refresh and per global sign-out (SQLite, counted)
    do {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let counting = CountingStorage(
            try await SQLiteCredentialStorage.open(path: folder.appendingPathComponent("credentials.sqlite").path))
        let counted = CredentialStore(storage: counting, clock: clock)
        let account = try await refreshing.signIn(
            .password(username: "user0", password: "user0-password"), into: counted)
        dev.faults.clear()
        clock.advance(3_600)
        counting.reset()
        _ = try await account.accessToken()
        let refresh = counting.counts
        record("store_ops.refresh.reads", Double(refresh.reads), "count")
        record("store_ops.refresh.opens", Double(refresh.opens), "count")
        record("store_ops.refresh.writes", Double(refresh.writes), "count")
        record("store_ops.refresh.leases", Double(refresh.leases), "count")
        counting.reset()
        _ = await account.revoke(.all)
        let revoke = counting.counts
        record("store_ops.revoke_all.reads", Double(revoke.reads), "count")
        record("store_ops.revoke_all.opens", Double(revoke.opens), "count")
        record("store_ops.revoke_all.writes", Double(revoke.writes), "count")
        record("store_ops.revoke_all.leases", Double(revoke.leases), "count")
        _ = try await refreshing.signIn(.password(username: "user0", password: "user0-password"), into: counted)
        clock.advance(3_600)
        counting.reset()
        _ = await counted.signOut(.current, options: .global)
        let signOut = counting.counts
        record("store_ops.global_signout.reads", Double(signOut.reads), "count")
        record("store_ops.global_signout.opens", Double(signOut.opens), "count")
        record("store_ops.global_signout.writes", Double(signOut.writes), "count")
        record("store_ops.global_signout.leases", Double(signOut.leases), "count")

        // An offline sign-out (every server step queued, in one write), then the drain that
        // sends what it queued once the provider is back: claims open only what they claim.
        _ = try await refreshing.signIn(.password(username: "user0", password: "user0-password"), into: counted)
        dev.faults.isOffline = true
        counting.reset()
        _ = await counted.signOut(.current, options: .global)
        let offline = counting.counts
        dev.faults.isOffline = false
        for (name, value) in [
            ("reads", offline.reads), ("opens", offline.opens), ("writes", offline.writes),
            ("leases", offline.leases),
        ] {
            record("store_ops.offline_signout.\(name)", Double(value), "count")
        }
        let queued = try await counted.outboxEntries().count
        counting.reset()
        _ = await counted.drainOutbox(DrainOptions(includeNotDue: true))
        let drain = counting.counts
        record("store_ops.drain.entries", Double(queued), "count")
        for (name, value) in [
            ("reads", drain.reads), ("opens", drain.opens), ("writes", drain.writes), ("claims", drain.claims),
        ] {
            record("store_ops.drain.\(name)", Double(value), "count")
        }

        // MARK: The window a SIGKILL can hit: from a refresh request sent until its answer is
        // stored (SQLite, loopback, no added latency). SIGINT, SIGTERM and SIGHUP wait it out.
        let relogged = try await refreshing.signIn(
            .password(username: "user0", password: "user0-password"), into: counted)
        let windows = NIOLockedValueBox<[Double]>([])
        UninterruptibleWork.observe { window in windows.withLockedValue { $0.append(milliseconds(window)) } }
        for _ in 0..<(quick ? 5 : 50) { _ = try await relogged.refresh() }
        UninterruptibleWork.observe(nil)
        let measured = windows.withLockedValue { $0 }
        record("refresh.uninterruptible_window.median", percentile(measured, 0.5), "ms")
        record("refresh.uninterruptible_window.p99", percentile(measured, 0.99), "ms")
    }

    // MARK: Outbox drain: 1,000 queued revocations, 20 ms added latency
    dev.faults.clear()
    dev.faults.set(.latency(milliseconds: 20), for: .revocation)
    let outboxStore = CredentialStore.inMemory()
    await outboxStore.register(provider)
    for index in 0..<(quick ? 200 : 1_000) {
        try await outboxStore.outbox.enqueue(
            [
                OutboxEntry(
                    provider: provider.identity, action: .revoke(.refreshToken), payload: .token("queued-\(index)"),
                    account: "bench",
                    tokenExpiresAt: nil, createdAt: Date(), attempts: 1, nextAttemptAt: Date(), lastError: nil)
            ],
            limit: .max)
    }
    let drainStart = ContinuousClock.now
    let drained = await outboxStore.drainOutbox(DrainOptions(maximumConcurrency: 32))
    let drainTime = milliseconds(ContinuousClock.now - drainStart)
    record("outbox.drain_1000.wall", drainTime, "ms")
    record("outbox.drain_1000.peak_concurrency", Double(drained.peakConcurrency), "count")
    record("outbox.drain_1000.revoked", Double(drained.revoked), "count")
    await dev.stop()
}

// MARK: The store with 10,000 credentials

if runs("locks") { await lockFigures() }
if runs("dpop") { try await dpopFigures() }
if runs("mcp") { try await mcpFigures() }
if runs("hotpath") { try await hotPathFigures() }

if runs("store") {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let path = folder.appendingPathComponent("credentials.sqlite").path
    let count = quick ? 1_000 : 10_000
    let store = try await CredentialStore.sqlite(at: path)
    let provider = ProviderIdentity(issuer: "https://issuer.example", clientID: "bench")
    var adds: [Double] = []
    var ids: [CredentialID] = []
    for index in 0..<count {
        let claims = #"{"sub":"s\#(index)","preferred_username":"user\#(index)","email":"user\#(index)@example.com"}"#
        let payload = Data(claims.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let token = Token(
            accessToken: String(repeating: "a", count: 900) + "\(index)", refreshToken: "r\(index)-\(UUID())",
            idToken: "eyJhbGciOiJSUzI1NiJ9.\(payload).sig", issuedAt: Date(),
            expiresAt: Date().addingTimeInterval(3_600),
            provider: provider)
        var stored: StoredCredential?
        adds.append(try await time { stored = try await store.add(token) })
        if let stored { ids.append(stored.id) }
        // The size the issue on find(where:) was measured at: a predicate no slower than 2× an
        // indexed query.
        if ids.count == 1_210 {
            var byEmail: [Double] = []
            var byPredicate: [Double] = []
            for _ in 0..<200 {
                let email = "user\(Int.random(in: 0..<1_210))@example.com"
                byEmail.append(try await time { _ = try await store.find(.email(email)) })
                byPredicate.append(try await time { _ = try await store.find(where: { $0.email == email }) })
            }
            record("store.at1210.find_by_email.median", percentile(byEmail, 0.5), "ms")
            record("store.at1210.find_where.median", percentile(byPredicate, 0.5), "ms")
        }
    }
    record("store.add.median", percentile(adds, 0.5), "ms")
    record("store.add.p99", percentile(adds, 0.99), "ms")
    var listed = 0
    var reopened: CredentialStore?
    let opening = try await time { reopened = try await CredentialStore.sqlite(at: path) }
    let listing = try await time { listed = try await reopened?.accounts().count ?? 0 }
    record("store.open", opening, "ms")
    record("store.list", listing, "ms")
    record("store.open_and_list", opening + listing, "ms")
    record("store.listed", Double(listed), "count")
    var finds: [Double] = []
    for _ in 0..<200 {
        let email = "user\(Int.random(in: 0..<count))@example.com"
        finds.append(try await time { _ = try await store.find(.email(email)) })
    }
    record("store.find_by_email.median", percentile(finds, 0.5), "ms")
    record("store.find_by_email.p99", percentile(finds, 0.99), "ms")
    // The same match by a predicate: the summaries, then the match in one read.
    var predicateFinds: [Double] = []
    for _ in 0..<200 {
        let email = "user\(Int.random(in: 0..<count))@example.com"
        predicateFinds.append(try await time { _ = try await store.find(where: { $0.email == email }) })
    }
    record("store.find_where.median", percentile(predicateFinds, 0.5), "ms")
    record("store.find_where.p99", percentile(predicateFinds, 0.99), "ms")
    var removes: [Double] = []
    for id in ids.shuffled().prefix(200) {
        removes.append(try await time { try await store.remove(id) })
    }
    record("store.remove.median", percentile(removes, 0.5), "ms")
    record("store.remove.p99", percentile(removes, 0.99), "ms")
    let size = ["", "-wal", "-shm"].compactMap {
        (try? FileManager.default.attributesOfItem(atPath: path + $0)[.size] as? NSNumber)?.doubleValue
    }.reduce(0, +)
    record("store.file_size", size / 1_048_576, "MiB")
}

// MARK: The command-line tool as fresh processes

if runs("cli") { try await cliFigures() }

// MARK: The workloads compared with peers, side by side

if runs("peers") {
    let issuer = arguments.firstIndex(of: "--issuer").flatMap {
        $0 + 1 < arguments.count ? URL(string: arguments[$0 + 1]) : nil
    }
    // With a provider of its own, each latency the comparisons use; with a shared one, the
    // latency its caller set there (a label).
    let latency = arguments.firstIndex(of: "--latency").flatMap {
        $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil
    }
    let latencies = latency.map { [$0] } ?? (issuer == nil ? [0, 20, 50] : [0])
    for latency in latencies { try await peerFigures(issuer: issuer, latency: latency) }
}

// MARK: The fleet store, when a PostgreSQL server is named

let postgresURL =
    arguments.firstIndex(of: "--postgres").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    ?? ProcessInfo.processInfo.environment["LATCHKEY_BENCH_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

if runs("web") { try await webFigures(postgres: postgresURL) }

// With --pgbouncer URL (or $LATCHKEY_BENCH_PGBOUNCER_URL: a PgBouncer in transaction mode before
// the same server), the figures again through it.
let pgbouncerURL =
    arguments.firstIndex(of: "--pgbouncer").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    ?? ProcessInfo.processInfo.environment["LATCHKEY_BENCH_PGBOUNCER_URL"].flatMap { $0.isEmpty ? nil : $0 }

if let postgresURL {
    if runs("postgres") { try await postgresFigures(url: postgresURL) }
    if runs("postgres"), let pgbouncerURL {
        try await postgresFigures(url: pgbouncerURL, label: "postgres.pgbouncer_transaction")
    }
} else if runs("postgres") {
    FileHandle.standardError.write(
        Data("latchkey-bench: no PostgreSQL figures (name a server with --postgres URL)\n".utf8))
}

if asJSON {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(figures), as: UTF8.self))
}

// A figure more than 20 % worse than the one README records fails the run, loudly.
let regressions = Baseline.regressions(
    figures, recorded: Baseline.recorded(in: (try? String(contentsOf: Baseline.readme, encoding: .utf8)) ?? ""))
for line in regressions { FileHandle.standardError.write(Data((line + "\n").utf8)) }
if !regressions.isEmpty, !arguments.contains("--no-baseline") { exit(1) }

/// A clock the benchmark moves forward to expire tokens: the system's time, plus an offset.
final class OffsetClock: LatchkeyClock {
    private let offset = NIOLockedValueBox<TimeInterval>(0)
    var date: Date { Date().addingTimeInterval(offset.withLockedValue { $0 }) }
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { ContinuousClock().minimumResolution }
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }
    func advance(_ seconds: TimeInterval) { offset.withLockedValue { $0 += seconds } }
}
