import Foundation
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// Several processes on one SQLite store, and processes killed in the middle of writing.
@Suite("SQLite store across processes", .serialized)
struct MultiProcessStoreTests {
    let worker = Executables.url("latchkey-store-worker")

    func committedIDs(_ output: String, _ prefix: String = "committed ") -> [String] {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
    }

    @Test("eight processes meeting one stale provider document: one of them claims its revalidation")
    func oneRevalidationClaim() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let key = "discovery https://issuer.example/.well-known/openid-configuration"
        let fetched = Date(timeIntervalSince1970: 1_800_000_000)
        try await SQLiteCredentialStorage.open(path: path).setProviderDocument(
            ProviderDocument(body: Data("{}".utf8), fetchedAt: fetched, expiresAt: fetched.addingTimeInterval(60)),
            for: key)
        var workers: [ChildProcess] = []
        for _ in 0..<8 {
            let process = try await ChildProcess.start(worker, ["claim", path, key])
            _ = try await process.standardOutput { $0.contains("ready") }
            workers.append(process)
        }
        for process in workers { process.write("go\n") }
        var outcomes: [String] = []
        for process in workers {
            let result = try await process.finish()
            #expect(result.status == 0, "\(result.stderr)")
            outcomes += result.stdout.split(separator: "\n").map(String.init).filter { $0 == "won" || $0 == "lost" }
        }
        #expect(outcomes.count == 8)
        #expect(outcomes.filter { $0 == "won" }.count == 1, "\(outcomes)")
    }

    @Test("two processes adding 200 credentials each at once lose nothing")
    func twoWriters() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let first = try await ChildProcess.start(worker, [path, "200", "first"])
        let second = try await ChildProcess.start(worker, [path, "200", "second"])
        async let firstResult = first.finish()
        async let secondResult = second.finish()
        let (a, b) = try await (firstResult, secondResult)
        #expect(a.status == 0, "\(a.stderr)")
        #expect(b.status == 0, "\(b.stderr)")
        let reported = committedIDs(a.stdout) + committedIDs(b.stdout)
        #expect(reported.count == 400)

        let stored = try await SQLiteCredentialStorage(path: path).all()
        #expect(stored.count == 400)
        #expect(Set(stored.map(\.id.rawValue)) == Set(reported))
        #expect(stored.filter { $0.metadata.tags["worker"] == "first" }.count == 200)
        #expect(stored.filter { $0.metadata.tags["worker"] == "second" }.count == 200)
        // Every token opens and is the one its process wrote.
        for credential in stored {
            let label = try #require(credential.metadata.tags["worker"])
            let index = try #require(credential.metadata.tags["index"])
            #expect(credential.token.accessToken == "at-\(label)-\(index)")
        }
    }

    /// Fifty kills; twelve under the thread sanitizer, which looks for races rather than for
    /// the odds of a kill landing mid-write, and where each round's processes start slowly.
    static let killRounds = TestTiming.slowdown >= 4 ? 12 : 50

    @Test("writers killed with SIGKILL leave every committed credential and outbox entry intact (50 rounds)")
    func killedWriters() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        // The store exists before the first kill: a process killed while it creates a new store
        // leaves a key file beside an empty database, which every later open refuses by design
        // (it cannot tell that from a store someone emptied). This test is about writes.
        try SQLiteCredentialStorage(path: path).close()
        var committed: Set<String> = []
        var queued: Set<String> = []
        var generator = SystemRandomNumberGenerator()
        for round in 0..<Self.killRounds {
            // Two writers at once, so the kill can land while the other holds the lock.
            let victim = try await ChildProcess.start(worker, [path, "0", "victim\(round)"])
            let bystander = try await ChildProcess.start(worker, [path, "25", "bystander\(round)"])
            // Killed while it writes: once its first write is in, at a random point of the next
            // ones (a start-up that is slow, as under the sanitizer, must not end it first).
            _ = try await victim.standardOutput { $0.contains("queued ") }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...200, using: &generator)))
            victim.send(signal: SIGKILL)
            let (victimResult, bystanderResult) = try await (victim.finish(), bystander.finish())
            #expect(victimResult.status == SIGKILL, "round \(round): \(victimResult.stderr)")
            #expect(bystanderResult.status == 0, "round \(round): \(bystanderResult.stderr)")
            committed.formUnion(committedIDs(victimResult.stdout))
            committed.formUnion(committedIDs(bystanderResult.stdout))
            queued.formUnion(committedIDs(victimResult.stdout, "queued "))
            queued.formUnion(committedIDs(bystanderResult.stdout, "queued "))

            let storage = try SQLiteCredentialStorage(path: path)
            let stored = try await storage.all()
            let storedIDs = stored.map(\.id.rawValue)
            let outbox = try await storage.outboxEntries().map(\.id.uuidString)
            #expect(Set(outbox).count == outbox.count, "round \(round): duplicated outbox entries")
            #expect(queued.subtracting(outbox).isEmpty, "round \(round): queued outbox entries lost")
            #expect(Set(storedIDs).count == storedIDs.count, "round \(round): duplicated rows")
            let missing = committed.subtracting(storedIDs)
            #expect(missing.isEmpty, "round \(round): \(missing.count) committed credentials lost")
            // At most one write per killed process can commit without having been reported.
            #expect(stored.count <= committed.count + round + 1, "round \(round)")
        }
        #expect(committed.count > Self.killRounds * 25)
        #expect(queued.count > Self.killRounds * 25)
    }

    @Test("four processes share one refresh lease: never two holders at once, and no update lost")
    func leaseAcrossProcesses() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let id = try await store.add(Fixtures.token(user: "alice")).id
        let workers = try await withThrowingTaskGroup { group in
            for _ in 0..<4 {
                group.addTask { try await ChildProcess.run(worker, ["lease", path, id.rawValue, "10"]) }
            }
            return try await group.reduce(into: [ChildProcess.Result]()) { $0.append($1) }
        }
        var intervals: [(enter: Double, leave: Double)] = []
        for result in workers {
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map { $0.split(separator: " ") }
            let enters = lines.filter { $0.first == "enter" }.compactMap { Double($0[1]) }
            let leaves = lines.filter { $0.first == "leave" }.compactMap { Double($0[1]) }
            #expect(enters.count == 10)
            intervals += zip(enters, leaves).map { ($0, $1) }
        }
        intervals.sort { $0.enter < $1.enter }
        for (earlier, later) in zip(intervals, intervals.dropFirst()) {
            #expect(earlier.leave <= later.enter, "two processes held the lease at once")
        }
        // Forty compare-and-swap updates from four processes: every one of them landed.
        let tags = try #require(try await store.credential(for: id)).metadata.tags
        #expect(tags.count == 40)
    }

    @Test("a holder killed with SIGKILL loses the lease at once, not after its duration", .timeLimit(.minutes(1)))
    func killedHolder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let id = try await store.add(Fixtures.token(user: "alice")).id
        let holder = try await ChildProcess.start(worker, ["hold", path, id.rawValue])
        _ = try await holder.standardOutput { $0.contains("holding") }
        holder.send(signal: SIGKILL)
        #expect(try await holder.finish().status == SIGKILL)
        // The dead holder took the lease for 600 s; waiting that long would break the time limit.
        let taken = try await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(30))) {
            _ in true
        }
        #expect(taken)
    }

    @Test(
        "a holder in another PID namespace keeps its lease while it renews it, and loses it once its row runs out",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func holderInAnotherPIDNamespace() async throws {
        let unshare = URL(fileURLWithPath: "/usr/bin/unshare")
        let isolating = ["--pid", "--fork", "--mount-proc", "--kill-child"]
        let probe = try? await ChildProcess.run(unshare, isolating + ["true"], input: "")
        if probe?.status != 0 {
            // Needs util-linux's unshare and the right to make namespaces (root, as CI runs).
            try #require(
                ProcessInfo.processInfo.environment["LATCHKEY_REQUIRE_PROVIDERS"] != "1",
                "unshare cannot make a PID namespace here: \(probe?.stderr ?? "no unshare")")
            return
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let id = try await store.add(Fixtures.token(user: "alice")).id
        // The holder's pid is a number in a namespace of its own (1, its PID namespace's first
        // process, or close): here it names another process. Its lease's term is short; it
        // renews its row every quarter of it.
        let term = TestTiming.scaled(.seconds(2))
        let seconds = Double(term.components.seconds)
        let holder = try await ChildProcess.start(
            unshare, isolating + [worker.path, "hold", path, id.rawValue, "\(seconds)"])
        _ = try await holder.standardOutput { $0.contains("holding") }
        // Past its row's first term, the holder still works and renews: the lease stays its.
        let taken = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                (try? await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(30))) {
                    _ in true
                }) ?? false
            }
            group.addTask {
                try? await Task.sleep(for: term * 2)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(taken == nil, "the lease was taken from a live holder in another PID namespace")
        holder.send(signal: SIGKILL)
        _ = try await holder.finish()
        // Dead, it renews nothing: the lease is free once its row runs out.
        let after = try await store.storage.withCredentialLease(for: id, terms: LeaseTerms(duration: .seconds(30))) {
            _ in true
        }
        #expect(after)
    }

    @Test("processes that open a new store while another writes to it all succeed (20 rounds)")
    func openWhileWriting() async throws {
        for round in 0..<20 {
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let path = folder.file("credentials.sqlite")
            let writer = try await ChildProcess.start(worker, [path, "0", "writer"])
            let openers = try await withThrowingTaskGroup { group in
                for index in 0..<3 {
                    group.addTask { try await ChildProcess.run(worker, [path, "10", "opener\(index)"]) }
                }
                return try await group.reduce(into: [ChildProcess.Result]()) { $0.append($1) }
            }
            writer.send(signal: SIGKILL)
            let written = try await writer.finish()
            #expect(written.status == SIGKILL, "round \(round): the writer failed: \(written.stderr)")
            for result in openers { #expect(result.status == 0, "round \(round): \(result.stderr)") }
        }
    }
}
