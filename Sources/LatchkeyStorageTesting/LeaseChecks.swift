import Foundation
import Latchkey
import NIOConcurrencyHelpers
import Testing

/// The checks of the credential lease (``CredentialStorage/withCredentialLease(for:terms:_:)``),
/// each rule of ``LeaseTerms`` with a clock the check moves by hand. No check waits for a
/// lease to run out in real time.
enum LeaseChecks {
    typealias Storage = any CredentialStorage & OutboxStorage

    static let terms = LeaseTerms(duration: .seconds(30), clock: ContractClock())

    /// One holder per credential at a time; another credential's lease is taken meanwhile.
    static func oneHolderAtATime(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        let bob = ContractFixtures.credential("bob", created: 1)
        try await storage.insert(alice)
        try await storage.insert(bob)
        let tracker = LeaseTracker()
        let aliceEntered = ContractSignal()
        let bobEntered = ContractSignal()
        try await withThrowingTaskGroup { group in
            // Alice's first holder stays inside until Bob's holder is in: the two credentials'
            // leases are independent. It is inside before the others start (tasks of a group
            // start in no set order: had another of Alice's holders gone first, every one of
            // Bob's could be done before this one got in, and the check would fail on timing).
            group.addTask {
                try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in
                    tracker.enter(alice.id)
                    aliceEntered.signal()
                    await bobEntered.wait()
                    tracker.leave(alice.id)
                }
            }
            await aliceEntered.wait()
            for index in 0..<10 {
                let id = index.isMultiple(of: 2) ? alice.id : bob.id
                group.addTask {
                    try await storage.withCredentialLease(for: id, terms: terms) { _ in
                        tracker.enter(id)
                        if id == bob.id { bobEntered.signal() }
                        await Task.yield()
                        tracker.leave(id)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(tracker.peakPerCredential == 1, "two holders of one credential's lease at once")
        #expect(tracker.peakOverall == 2)
        #expect(tracker.entries == 11)
        // A released lease can be taken again at once.
        #expect(try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in "free" } == "free")
    }

    /// A holder that is still working keeps the lease however far the clock moves past its
    /// duration: it is never handed to a waiter meanwhile.
    static func keptWhileWorking(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        let clock = ContractClock()
        let terms = LeaseTerms(duration: .seconds(30), clock: clock)
        let tracker = LeaseTracker()
        let inside = ContractSignal()
        let release = ContractSignal()
        try await withThrowingTaskGroup { group in
            group.addTask {
                try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in
                    tracker.enter(alice.id)
                    inside.signal()
                    await release.wait()
                    tracker.leave(alice.id)
                }
            }
            await inside.wait()
            // Far past its duration, by the lease's clock, the holder is still working.
            clock.advance(by: .seconds(3_600))
            group.addTask {
                try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in
                    tracker.enter(alice.id)
                    tracker.leave(alice.id)
                }
            }
            // The waiter has time to try (a backend that polls does, several times); it must not
            // get in.
            try await Task.sleep(for: .milliseconds(400))
            #expect(tracker.entries == 1, "the lease was taken from a holder that was still working")
            release.signal()
            try await group.waitForAll()
        }
        #expect(tracker.peakPerCredential == 1)
        #expect(tracker.entries == 2)
    }

    /// A waiter that is cancelled stops waiting with `cancelled` and holds nothing; the holder
    /// keeps the lease, and the next waiter gets it once the holder is done.
    static func cancellableWaiter(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        let inside = ContractSignal()
        let release = ContractSignal()
        let holder = Task {
            try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in
                inside.signal()
                await release.wait()
                return "held"
            }
        }
        await inside.wait()
        let waiter = Task {
            try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in "waited" }
        }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        let outcome = await waiter.result
        #expect(throws: StorageError.self) { try outcome.get() }
        if case .failure(let error as StorageError) = outcome { #expect(error.code == .cancelled) }
        release.signal()
        #expect(try await holder.value == "held")
        #expect(try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in "next" } == "next")
    }

    /// A holder whose task is cancelled while it holds the lease still releases it when its
    /// body returns.
    static func releasedAfterCancellation(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        let inside = ContractSignal()
        let holder = Task {
            try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in
                inside.signal()
                // Returns once its task is cancelled.
                try? await Task.sleep(for: .seconds(3_600))
            }
        }
        await inside.wait()
        holder.cancel()
        _ = await holder.result
        let next = Task { try await storage.withCredentialLease(for: alice.id, terms: terms) { _ in "next" } }
        #expect(try await next.value == "next")
    }

    /// The holder reads and writes the credential through the access it is handed, with the
    /// storage's rules: compare-and-swap, deletion clears the default, outbox entries in one write.
    static func access(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        try await storage.setDefaultCredentialID(alice.id)
        try await storage.withCredentialLease(for: alice.id, terms: terms) { access in
            do {
                #expect(access.id == alice.id)
                var read = try #require(try await access.credential())
                #expect(read == alice)
                read.token.accessToken = "SECRET-UNDER-LEASE"
                try await access.update(read)
                let stale = read
                read.version += 1
                #expect(try await access.credential() == read)
                await #expect(throws: StorageError.self) { try await access.update(stale) }
                let entries = [ContractFixtures.entry("SECRET-QUEUED-1"), ContractFixtures.entry("SECRET-QUEUED-2")]
                if try await access.enqueue(entries, limit: 10) {
                    #expect(Set(try await storage.outboxEntries().map(\.id)) == Set(entries.map(\.id)))
                }
                let deletion = try await access.delete()
                #expect(deletion == .deletedDefault)
            } catch {
                Issue.record(error)
            }
        }
        #expect(try await storage.credential(for: alice.id) == nil)
        #expect(try await storage.defaultCredentialID() == nil)
    }

    /// The access is the lease's, for its one credential: it refuses another credential, and,
    /// kept past its body, refuses every read and write (the lease is another holder's by then).
    static func scopedAccess(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        let bob = ContractFixtures.credential("bob", created: 1)
        try await storage.insert(alice)
        try await storage.insert(bob)
        let kept = try await storage.withCredentialLease(for: alice.id, terms: terms) { access in
            let error = await #expect(throws: StorageError.self) { try await access.update(bob) }
            #expect(error?.code == .leaseNotHeld, "a write to another credential through alice's lease")
            return access
        }
        func refused(_ what: String, _ attempt: () async throws -> Void) async {
            do {
                try await attempt()
                Issue.record("\(what) after the lease worked")
            } catch {
                #expect((error as? StorageError)?.code == .leaseNotHeld, "\(what): \(error)")
            }
        }
        var changed = alice
        changed.token.accessToken = "SECRET-AFTER-LEASE"
        await refused("a read") { _ = try await kept.credential() }
        await refused("an update") { try await kept.update(changed) }
        await refused("a delete") { _ = try await kept.delete() }
        await refused("a delete by version") { _ = try await kept.delete(ifVersion: alice.version) }
        await refused("queueing") { _ = try await kept.enqueue([ContractFixtures.entry("SECRET-LATE")], limit: 10) }
        #expect(try await storage.credential(for: alice.id) == alice, "nothing changed after the lease")
        #expect(try await storage.credential(for: bob.id) == bob)
        #expect(try await storage.outboxEntries().isEmpty)
    }

    /// A delete by compare-and-swap deletes only the version it names, clearing the default as a
    /// delete does; a record that changed is left as it is.
    static func conditionalDelete(_ storage: Storage) async throws {
        let bob = ContractFixtures.credential("bob")
        try await storage.insert(bob)
        try await storage.setDefaultCredentialID(bob.id)
        try await storage.withCredentialLease(for: bob.id, terms: terms) { access in
            do {
                var read = try #require(try await access.credential())
                read.token.accessToken = "SECRET-NEWER"
                try await access.update(read)
                #expect(try await access.delete(ifVersion: bob.version) == nil, "an older version")
                #expect(try await access.credential()?.token.accessToken == "SECRET-NEWER")
                #expect(
                    try await access.delete(ifVersion: bob.version + 1)
                        == .deletedDefault)
                #expect(
                    try await access.delete(ifVersion: bob.version + 1)
                        == .notFound, "already gone")
            } catch {
                Issue.record(error)
            }
        }
        #expect(try await storage.credential(for: bob.id) == nil)
        #expect(try await storage.defaultCredentialID() == nil)
    }
}

/// Counts who is inside a lease at the same time.
final class LeaseTracker: Sendable {
    private struct Counts {
        var inside: [CredentialID: Int] = [:]
        var peakPerCredential = 0
        var peakOverall = 0
        var entries = 0
    }

    private let counts = NIOLockedValueBox(Counts())

    func enter(_ id: CredentialID) {
        counts.withLockedValue { counts in
            counts.inside[id, default: 0] += 1
            counts.entries += 1
            counts.peakPerCredential = max(counts.peakPerCredential, counts.inside[id, default: 0])
            counts.peakOverall = max(counts.peakOverall, counts.inside.values.filter { $0 > 0 }.count)
        }
    }

    func leave(_ id: CredentialID) { counts.withLockedValue { $0.inside[id, default: 0] -= 1 } }

    var peakPerCredential: Int { counts.withLockedValue { $0.peakPerCredential } }
    var peakOverall: Int { counts.withLockedValue { $0.peakOverall } }
    var entries: Int { counts.withLockedValue { $0.entries } }
}

/// A one-shot signal: `wait()` returns once `signal()` was called, before or after.
final class ContractSignal: Sendable {
    private let state = NIOLockedValueBox<(signalled: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.signalled = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state -> Bool in
                if state.signalled { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// The lease's clock in the checks: its date moves only when a check moves it; it waits on the
/// system's clock.
final class ContractClock: LatchkeyClock {
    private let offset = NIOLockedValueBox(Duration.zero)
    private let origin: Date

    /// A clock whose date starts at `origin`.
    init(at origin: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.origin = origin
    }

    var now: ContinuousClock.Instant { ContinuousClock.now + offset.withLockedValue { $0 } }
    var minimumResolution: Duration { ContinuousClock().minimumResolution }
    var date: Date {
        let offset = offset.withLockedValue { $0 }
        return origin.addingTimeInterval(
            Double(offset.components.seconds) + Double(offset.components.attoseconds) / 1e18)
    }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline - offset.withLockedValue { $0 }, tolerance: tolerance)
    }

    func advance(by duration: Duration) { offset.withLockedValue { $0 += duration } }
}
