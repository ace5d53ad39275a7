import Foundation
public import Latchkey
public import Testing

/// A backend whose leases and outbox claims can be taken over: another instance takes a lease
/// whose holder stalled past its term (a stopped process, a stalled connection), where the
/// backend cannot see that the holder is still working. What the takeover checks need to make
/// one happen now, as if the term had passed.
///
/// The in-memory storage has none: its leases live exactly as long as their holders' tasks, in
/// the one process that holds the whole store.
public protocol LeaseTakeover: Sendable {
    /// Hands every lease and outbox claim held now to another holder, as another instance does
    /// once their holders' terms ran out.
    func takeOverHeldLeases() async throws
}

extension StorageContract {
    /// A new, empty storage of a backend whose leases can be taken over.
    public typealias TakeoverFactory =
        @Sendable () async throws -> any CredentialStorage & OutboxStorage & LeaseTakeover

    /// One check of a lease taken over.
    public struct TakeoverCheck: Sendable, CustomTestStringConvertible {
        /// What it checks.
        public let name: String
        let body: @Sendable (any CredentialStorage & OutboxStorage & LeaseTakeover) async throws -> Void

        /// Runs the check against a new storage from `make`.
        public func run(_ make: TakeoverFactory) async throws {
            try await body(try await make())
        }

        public var testDescription: String { name }
    }

    /// The checks of a backend whose leases can be taken over (``LeaseTakeover``): a holder that
    /// lost its lease or claim writes nothing but what compare-and-swap allows, and is told so.
    public static let takeoverChecks: [TakeoverCheck] = [
        TakeoverCheck(
            name:
                "after a takeover, the first holder's compare-and-swap writes go by their version; its unconditional ones throw and change nothing",
            body: TakeoverChecks.credentialLease),
        TakeoverCheck(
            name: "after a takeover, a lost outbox claim's settle says so and changes nothing",
            body: TakeoverChecks.outboxClaim),
    ]
}

enum TakeoverChecks {
    typealias Storage = any CredentialStorage & OutboxStorage & LeaseTakeover

    /// After a takeover, a holder's compare-and-swap writes still go by their version: the
    /// answer a stalled holder got from the provider (a rotated refresh token, the only live one)
    /// is stored when nothing was written since, and refused when something was. Its
    /// unconditional writes (a delete without a version, queued server steps) throw
    /// ``StorageError/Code/leaseNotHeld`` and change nothing.
    static func credentialLease(_ storage: Storage) async throws {
        let alice = ContractFixtures.credential("alice")
        try await storage.insert(alice)
        let before = try #require(try await storage.credential(for: alice.id))
        let outcomes = try await storage.withCredentialLease(for: alice.id, terms: LeaseChecks.terms) { access in
            var outcomes: [String: String] = [:]
            do {
                try await storage.takeOverHeldLeases()
            } catch {
                Issue.record("the takeover could not be made: \(error)")
            }
            func attempt(_ what: String, _ write: () async throws -> String) async {
                do {
                    outcomes[what] = try await write()
                } catch {
                    outcomes[what] = (error as? StorageError).map { "\($0.code)" } ?? "\(error)"
                }
            }
            var changed = before
            changed.token.refreshToken = "rotated-while-stalled"
            await attempt("update") {
                try await access.update(changed)
                return "written"
            }
            await attempt("update again") {
                try await access.update(changed)
                return "written"
            }
            await attempt("delete(ifVersion:)") {
                try await access.delete(ifVersion: before.version) == nil ? "changed meanwhile" : "deleted"
            }
            await attempt("delete") {
                _ = try await access.delete()
                return "deleted"
            }
            await attempt("enqueue") {
                _ = try await access.enqueue([ContractFixtures.entry("after-the-takeover")], limit: 100)
                return "queued"
            }
            return outcomes
        }
        #expect(outcomes["update"] == "written", "the only live token is kept: \(outcomes)")
        #expect(outcomes["update again"] == "versionConflict", "\(outcomes)")
        #expect(outcomes["delete(ifVersion:)"] == "changed meanwhile", "\(outcomes)")
        #expect(outcomes["delete"] == "leaseNotHeld", "\(outcomes)")
        #expect(outcomes["enqueue"] == "leaseNotHeld", "\(outcomes)")
        let after = try #require(try await storage.credential(for: alice.id), "the credential is still there")
        #expect(after.version == before.version + 1 && after.token.refreshToken == "rotated-while-stalled")
        #expect(try await storage.outboxEntries().isEmpty, "nothing was queued")
    }

    static func outboxClaim(_ storage: Storage) async throws {
        let entries = [ContractFixtures.entry("one"), ContractFixtures.entry("two")]
        try await storage.enqueue(entries, limit: 100)
        let request = OutboxClaimRequest(dueBy: .distantFuture, limit: 10)
        let settled: StorageError.Code?? = try await storage.withOutboxClaim(request, terms: LeaseChecks.terms) {
            claim in
            #expect(claim.entries.count == 2)
            do {
                try await storage.takeOverHeldLeases()
            } catch {
                Issue.record("the takeover could not be made: \(error)")
            }
            var failed = claim.entries[1]
            failed.attempts = 7
            do {
                try await claim.settle(removing: [claim.entries[0].id], updating: [failed])
                return .some(nil)
            } catch {
                return (error as? StorageError)?.code
            }
        }
        #expect(
            settled == .leaseNotHeld,
            "a lost claim's settle: \(settled.map { "\($0.map { "\($0)" } ?? "went through")" } ?? "-")")
        let left = try await storage.outboxEntries()
        #expect(Set(left.map(\.id)) == Set(entries.map(\.id)), "nothing removed")
        #expect(left.allSatisfy { $0.attempts == 1 }, "nothing updated")
    }
}
