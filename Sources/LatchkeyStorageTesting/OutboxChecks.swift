import Foundation
import Latchkey
import Testing

/// The checks of ``OutboxStorage``: entries kept and queued in one write, and the claim, which
/// keeps the rules of a credential's lease (``LeaseTerms``), with a clock the checks move.
enum OutboxChecks {
    typealias Storage = any CredentialStorage & OutboxStorage

    static let now = Date(timeIntervalSince1970: 1_800_000_100)
    static let terms = LeaseTerms(duration: .seconds(30), clock: ContractClock(at: now))

    /// Claims `request` with `terms` and returns what it claimed, ending the claim at once.
    static func claimed(_ storage: Storage, _ request: OutboxClaimRequest, terms: LeaseTerms = terms)
        async throws -> (ids: [UUID], backlog: OutboxBacklog)
    {
        try await storage.withOutboxClaim(request, terms: terms) { claim in (claim.entries.map(\.id), claim.backlog) }
    }

    static func entries(_ storage: Storage) async throws {
        let late = ContractFixtures.entry("SECRET-LATE", due: 60)
        let early = ContractFixtures.entry("SECRET-EARLY", due: 30)
        try await storage.enqueue([late, early], limit: 10)
        #expect(try await storage.outboxEntries() == [early, late])
        #expect(try await storage.removeOutboxEntry(late.id))
        #expect(try await storage.removeOutboxEntry(late.id) == false, "already gone")
        #expect(try await storage.outboxEntries() == [early])
        // Outbox entries are never credentials.
        #expect(try await storage.all().isEmpty)
        #expect(try await storage.damagedOutboxEntries().isEmpty)
    }

    static func limit(_ storage: Storage) async throws {
        var first = ContractFixtures.entry("SECRET-1")
        try await storage.enqueue([first], limit: 2)
        // Two more than the bound allows: neither is added.
        let error = await #expect(throws: StorageError.self) {
            try await storage.enqueue(
                [ContractFixtures.entry("SECRET-2"), ContractFixtures.entry("SECRET-3")], limit: 2)
        }
        #expect(error?.code == .outboxFull)
        #expect(try await storage.outboxEntries().map(\.id) == [first.id])
        try await storage.enqueue([ContractFixtures.entry("SECRET-2")], limit: 2)
        // Writing an entry that is already there is not growth.
        first.failedPermanently = true
        first.lastError = "invalid_client"
        first.failureCause = .refused
        try await storage.enqueue([first], limit: 2)
        let stored = try #require(try await storage.outboxEntries().first { $0.id == first.id })
        #expect(stored.failedPermanently)
        #expect(stored == first)
    }

    /// Due entries, the earliest first, at most the limit, never one failed for good; every
    /// expired one, to be dropped; the backlog counted by state.
    static func claimsWhatIsDue(_ storage: Storage) async throws {
        let due = [ContractFixtures.entry("SECRET-A", due: 10), ContractFixtures.entry("SECRET-B", due: 20)]
        var permanent = ContractFixtures.entry("SECRET-P", due: 5)
        permanent.failedPermanently = true
        let later = ContractFixtures.entry("SECRET-LATER", due: 500)
        var expired = ContractFixtures.entry("SECRET-EXPIRED", due: 900)
        expired.tokenExpiresAt = now.addingTimeInterval(-1)
        try await storage.enqueue(due + [permanent, later, expired], limit: 10)

        let first = try await claimed(storage, OutboxClaimRequest(dueBy: now, limit: 1))
        #expect(first.ids == [due[0].id])
        #expect(
            first.backlog
                == OutboxBacklog(
                    total: 5, notDue: 2, waiting: 0, failedPermanently: 1, claimedElsewhere: 0,
                    oldestCreatedAt: due[0].createdAt))
        let all = try await claimed(storage, OutboxClaimRequest(dueBy: now, limit: 10))
        #expect(all.ids == due.map(\.id) + [expired.id], "a claim ended at its body's end is free again")
        let everything = try await claimed(storage, OutboxClaimRequest(dueBy: .distantFuture, limit: 10))
        #expect(Set(everything.ids) == Set((due + [later, expired]).map(\.id)))
        // Claims change nothing in the listing.
        #expect(try await storage.outboxEntries().count == 5)
    }

    /// An entry a live claim holds is not claimed by another while the first drainer works, past
    /// the claim's duration by its clock (the backend ties the claim to the drainer, or renews it
    /// every quarter of its duration); writes through the claim keep it; it ends when the body
    /// returns, and only then.
    static func claimHeldUntilItsBodyReturns(_ storage: Storage) async throws {
        let entries = [ContractFixtures.entry("SECRET-A", due: 10), ContractFixtures.entry("SECRET-B", due: 20)]
        try await storage.enqueue(entries, limit: 10)
        let clock = ContractClock(at: now)
        let terms = LeaseTerms(duration: .seconds(2), clock: clock)
        let inside = ContractSignal()
        let release = ContractSignal()
        try await withThrowingTaskGroup { group in
            group.addTask {
                try await storage.withOutboxClaim(OutboxClaimRequest(dueBy: now, limit: 1), terms: terms) { claim in
                    #expect(claim.entries.map(\.id) == [entries[0].id])
                    inside.signal()
                    await release.wait()
                    // A write through the claim keeps it.
                    var failed = claim.entries[0]
                    failed.attempts += 1
                    failed.lastError = "offline"
                    failed.failureCause = .unavailable
                    do {
                        try await claim.settle(removing: [], updating: [failed])
                    } catch {
                        Issue.record(error)
                    }
                    let during = try? await claimed(
                        storage, OutboxClaimRequest(dueBy: .distantFuture, limit: 10), terms: terms)
                    #expect(during?.ids == [entries[1].id], "an update ended the claim before its body returned")
                }
            }
            await inside.wait()
            // Three quarters of the claim's duration at a time, with time to renew in between:
            // more than twice its duration in all, and its drainer is still working.
            for _ in 0..<3 {
                clock.advance(by: .milliseconds(1_500))
                try await Task.sleep(for: .milliseconds(900))
                let meanwhile = try await claimed(
                    storage, OutboxClaimRequest(dueBy: .distantFuture, limit: 10), terms: terms)
                #expect(meanwhile.ids == [entries[1].id], "an entry was taken from a drainer that was still working")
                #expect(meanwhile.backlog.claimedElsewhere == 1)
            }
            release.signal()
            try await group.waitForAll()
        }
        let after = try await claimed(storage, OutboxClaimRequest(dueBy: .distantFuture, limit: 10), terms: terms)
        #expect(Set(after.ids) == Set(entries.map(\.id)), "the claim did not end with its body")
        #expect(try await storage.outboxEntries().first { $0.id == entries[0].id }?.attempts == 2)
    }

    /// A claim's settle removes and replaces its own entries in one write; kept past its body,
    /// the claim refuses to write.
    static func settle(_ storage: Storage) async throws {
        let sent = ContractFixtures.entry("SECRET-SENT", due: 10)
        let failed = ContractFixtures.entry("SECRET-FAILED", due: 20)
        let other = ContractFixtures.entry("SECRET-OTHER", due: 900)
        try await storage.enqueue([sent, failed, other], limit: 10)
        let kept = try await storage.withOutboxClaim(OutboxClaimRequest(dueBy: now, limit: 10), terms: terms) {
            claim in
            var retried = failed
            retried.attempts = 2
            retried.nextAttemptAt = now.addingTimeInterval(120)
            retried.failedPermanently = true
            retried.failureCause = .noProvider
            do {
                try await claim.settle(removing: [sent.id, other.id], updating: [retried])
            } catch {
                Issue.record(error)
            }
            return claim
        }
        let left = try await storage.outboxEntries()
        #expect(left.map(\.id) == [failed.id, other.id], "an entry the claim does not hold was removed")
        #expect(left.first?.failureCause == .noProvider)
        #expect(left.first?.attempts == 2)
        let error = await #expect(throws: StorageError.self) {
            try await kept.settle(removing: [failed.id], updating: [])
        }
        #expect(error?.code == .leaseNotHeld)
        #expect(try await storage.outboxEntries().count == 2, "a claim kept past its body wrote")
    }

    /// An entry that waits for another is claimed once that one is gone or failed for good.
    static func waitingEntries(_ storage: Storage) async throws {
        let global = ContractFixtures.entry("SECRET-GLOBAL", due: 10)
        var revocation = ContractFixtures.entry("SECRET-REVOKE", due: 0)
        revocation.waitsFor = global.id
        try await storage.enqueue([revocation, global], limit: 10)
        #expect(try await storage.outboxEntries().first { $0.id == revocation.id }?.waitsFor == global.id)
        // The entry it waits for first, though it is due later; the waiting one not at all.
        let first = try await claimed(storage, OutboxClaimRequest(dueBy: now, limit: 10))
        #expect(first.ids == [global.id])
        #expect(first.backlog.waiting == 1)
        // Once that one failed for good, the waiting one goes on its own.
        try await storage.withOutboxClaim(OutboxClaimRequest(dueBy: now, limit: 1), terms: terms) { claim in
            var failed = global
            failed.failedPermanently = true
            try? await claim.settle(removing: [], updating: [failed])
        }
        #expect(try await claimed(storage, OutboxClaimRequest(dueBy: now, limit: 10)).ids == [revocation.id])
        // Once it is gone too.
        #expect(try await storage.removeOutboxEntry(global.id))
        #expect(try await claimed(storage, OutboxClaimRequest(dueBy: now, limit: 10)).ids == [revocation.id])
    }

    /// Entries that failed for good are made due again by cause and provider, opening nothing.
    static func revival(_ storage: Storage) async throws {
        let other = ProviderIdentity(issuer: "https://other.example", clientID: "latchkey-contract")
        var noProvider = ContractFixtures.entry("SECRET-NO-PROVIDER", due: 10)
        noProvider.failedPermanently = true
        noProvider.failureCause = .noProvider
        var elsewhere = noProvider
        elsewhere = OutboxEntry(
            provider: other, action: .revoke(.refreshToken), payload: .token("SECRET-ELSEWHERE"), account: "bob",
            tokenExpiresAt: nil, createdAt: noProvider.createdAt, attempts: 1, nextAttemptAt: noProvider.nextAttemptAt,
            lastError: "no provider", failureCause: .noProvider, failedPermanently: true)
        var refused = ContractFixtures.entry("SECRET-REFUSED", due: 10)
        refused.failedPermanently = true
        refused.failureCause = .refused
        try await storage.enqueue([noProvider, elsewhere, refused], limit: 10)
        let revivedAt = now.addingTimeInterval(42)
        #expect(
            try await storage.reviveOutboxEntries(
                failedFor: .noProvider, of: [ContractFixtures.provider], at: revivedAt)
                == 1)
        var entries = try await storage.outboxEntries()
        #expect(entries.filter { !$0.failedPermanently }.map(\.id) == [noProvider.id])
        #expect(entries.first { $0.id == noProvider.id }?.nextAttemptAt == revivedAt)
        #expect(try await storage.reviveOutboxEntries(failedFor: nil, of: [], at: revivedAt) == 0)
        #expect(try await storage.reviveOutboxEntries(failedFor: nil, of: nil, at: revivedAt) == 2)
        entries = try await storage.outboxEntries()
        #expect(entries.allSatisfy { !$0.failedPermanently })
    }
}
