import Foundation
public import Latchkey
public import Testing

/// The contract every storage backend keeps — Latchkey's own and yours — as checks to run from
/// your tests with Swift Testing:
///
/// ```swift
/// import LatchkeyStorageTesting
/// import Testing
///
/// @Test(arguments: StorageContract.checks)
/// func contract(_ check: StorageContract.Check) async throws {
///     try await check.run { MyStorage(freshDatabase: ...) }   // a new, empty storage each time
/// }
/// ```
///
/// A check that fails records its issues in the running test. The storage the factory returns
/// must be empty, and must implement both protocols (most backends keep credentials and the
/// outbox in one database); ``credentialChecks`` and ``outboxChecks`` run either half alone.
public enum StorageContract {
    /// A new, empty storage of the backend under test.
    public typealias Factory = @Sendable () async throws -> any CredentialStorage & OutboxStorage

    /// One check of the contract.
    public struct Check: Sendable, CustomTestStringConvertible {
        /// What it checks.
        public let name: String
        let body: @Sendable (any CredentialStorage & OutboxStorage) async throws -> Void

        /// Runs the check against a new storage from `make`.
        public func run(_ make: Factory) async throws {
            try await body(try await make())
        }

        public var testDescription: String { name }
    }

    /// Every check.
    public static var checks: [Check] { credentialChecks + leaseChecks + outboxChecks + webSessionChecks }

    /// The checks of `WebSessionStorage` (a backend that keeps no web sessions leaves them out).
    public static let webSessionChecks: [Check] = [
        Check(
            name: "web sessions: read, indexed by sid and subject, touched, stale, removed once",
            body: WebSessionChecks.sessions),
        Check(
            name: "web sessions and logout token ids: concurrent callers, one winner",
            body: WebSessionChecks.removedOnce),
        Check(name: "pending sign-ins are read, taken once and expire", body: WebSessionChecks.pendingSignIns),
        Check(
            name: "pending sign-ins are bounded per client and swept by their expiry",
            body: WebSessionChecks.pendingSignInBounds),
        Check(name: "logout token ids: a replay is refused until forgotten", body: WebSessionChecks.logoutTokens),
    ]

    /// The checks of ``CredentialStorage``.
    public static let credentialChecks: [Check] = [
        Check(name: "inserts, reads back, lists oldest first", body: CredentialChecks.insertAndRead),
        Check(name: "rejects a duplicate identifier and keeps the first", body: CredentialChecks.duplicate),
        Check(
            name: "updates in place and raises the version; a missing credential fails", body: CredentialChecks.update),
        Check(name: "a write from a stale read is refused and changes nothing", body: CredentialChecks.staleWrite),
        Check(name: "finds by subject, username, email and issuer", body: CredentialChecks.indexedQueries),
        Check(
            name: "deleting the default clears it; deleting another keeps it", body: CredentialChecks.deleteAndDefault),
        Check(name: "setting the default, even to nil, removes nothing", body: CredentialChecks.defaultAssignment),
        Check(
            name: "DPoP nonces are kept per server, replaced, and beside no credential",
            body: CredentialChecks.dpopNonces),
        Check(
            name: "provider documents are kept per key with their dates, replaced, and beside no credential",
            body: CredentialChecks.providerDocuments),
        Check(
            name: "a stale provider document's revalidation is claimed by one caller of many, once per claim",
            body: CredentialChecks.providerDocumentClaims),
    ]

    /// The checks of the credential lease: each rule of `LeaseTerms`, with a clock the checks
    /// move by hand.
    public static let leaseChecks: [Check] = [
        Check(
            name: "the lease admits one holder per credential at a time; credentials do not wait for each other",
            body: LeaseChecks.oneHolderAtATime),
        Check(
            name: "a holder that is still working keeps the lease however far the clock moves",
            body: LeaseChecks.keptWhileWorking),
        Check(name: "a waiter can be cancelled and holds nothing", body: LeaseChecks.cancellableWaiter),
        Check(
            name: "a holder whose task is cancelled releases the lease when its body returns",
            body: LeaseChecks.releasedAfterCancellation),
        Check(
            name: "the holder reads and writes through its access by compare-and-swap", body: LeaseChecks.access),
        Check(
            name: "the access is its lease's: another credential, or any use after the body returned, is refused",
            body: LeaseChecks.scopedAccess),
        Check(
            name: "a delete by compare-and-swap deletes only the version it names",
            body: LeaseChecks.conditionalDelete),
    ]

    /// The checks of ``OutboxStorage``, the claim's with the lease's rules.
    public static let outboxChecks: [Check] = [
        Check(name: "the outbox keeps entries, earliest due first, and removes them", body: OutboxChecks.entries),
        Check(
            name:
                "the outbox holds at most its limit, entries queued together all or none; a permanent failure is kept",
            body: OutboxChecks.limit),
        Check(
            name:
                "a claim takes due entries, earliest first, up to its limit, and every expired one; the backlog by state",
            body: OutboxChecks.claimsWhatIsDue),
        Check(
            name:
                "a claim is kept while its drainer works, past its duration, through its writes, and ends with its body",
            body: OutboxChecks.claimHeldUntilItsBodyReturns),
        Check(
            name: "a claim settles its own entries in one write, and refuses to once its body returned",
            body: OutboxChecks.settle),
        Check(
            name: "an entry that waits for another is claimed once that one is gone or failed for good",
            body: OutboxChecks.waitingEntries),
        Check(
            name: "entries that failed for good are made due again by cause and provider", body: OutboxChecks.revival),
    ]
}

/// Test values with distinctive secrets.
enum ContractFixtures {
    static let provider = ProviderIdentity(issuer: "https://issuer.example", clientID: "latchkey-contract")

    static func credential(_ user: String, created: TimeInterval = 0) -> StoredCredential {
        let date = Date(timeIntervalSince1970: 1_800_000_000 + created)
        let token = Token(
            accessToken: "SECRET-ACCESS-\(user)-\(UUID().uuidString)",
            refreshToken: "SECRET-REFRESH-\(user)-\(UUID().uuidString)", issuedAt: date,
            expiresAt: date.addingTimeInterval(3_600), provider: provider)
        var metadata = CredentialMetadata(token: token, tags: ["t": user])
        metadata.subject = "sub-\(user)"
        metadata.preferredUsername = user
        metadata.email = "\(user)@example.com"
        return StoredCredential(id: CredentialID(), token: token, metadata: metadata, createdAt: date, updatedAt: date)
    }

    static func entry(_ token: String, due: TimeInterval = 0) -> OutboxEntry {
        OutboxEntry(
            provider: provider, action: .revoke(.refreshToken), payload: .token(token), account: "alice",
            tokenExpiresAt: nil,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000), attempts: 1,
            nextAttemptAt: Date(timeIntervalSince1970: 1_800_000_000 + due), lastError: "offline")
    }
}
