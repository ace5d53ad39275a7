public import Foundation

/// Why a sign-out left the user signed in.
public struct SignOutError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to compare with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case cancelled, storageFailed, noSuchAccount, serverStepFailed, localRemovalFailed,
                revocationNotQueued, damagedRecord, someAccountsStillSignedIn, outOfOrder
        }

        private let base: Base

        /// The sign-out was cancelled before it began; nothing changed.
        public static let cancelled = Code(base: .cancelled)
        /// The credential store could not be read or its refresh lease taken; nothing changed.
        public static let storageFailed = Code(base: .storageFailed)
        /// No account matches the scope on this device.
        public static let noSuchAccount = Code(base: .noSuchAccount)
        /// A server step failed under ``SignOutPolicy/serverFirst``: the account stays signed in.
        public static let serverStepFailed = Code(base: .serverStepFailed)
        /// The credential could not be removed from this device.
        public static let localRemovalFailed = Code(base: .localRemovalFailed)
        /// A revocation failed and could not be queued either (the store failed, or the outbox is
        /// full): the account stays on this device, so that its token is not lost.
        public static let revocationNotQueued = Code(base: .revocationNotQueued)
        /// A record of the store is damaged and cannot be read: its tokens cannot be revoked, and
        /// it stays until removed on purpose (see ``CredentialStore/damagedRecords()``).
        public static let damagedRecord = Code(base: .damagedRecord)
        /// Of several accounts, some are signed out and some are still signed in: see
        /// ``SignOutError/accountFailures`` and ``SignOutResult/accounts``.
        public static let someAccountsStillSignedIn = Code(base: .someAccountsStillSignedIn)
        /// Latchkey's sign-out plan was told of a step it did not ask for (a defect of
        /// Latchkey's): it stopped there, and the steps so far say what was done.
        public static let outOfOrder = Code(base: .outOfOrder)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The account still signed in.
    public var account: CredentialID?
    /// What happened.
    public var reason: String
    /// The error behind it.
    public var underlying: (any Error & Sendable)?
    /// Whether signing out again later may succeed (a server or a store that was unreachable,
    /// say); a missing account or a damaged store stays as it is.
    public var isRetryable: Bool
    /// Why each account that is still signed in is, when a sign-out of several accounts left
    /// more than one reason (``Code/someAccountsStillSignedIn``); empty otherwise.
    public var accountFailures: [SignOutError]

    /// Creates an error.
    public init(
        _ code: Code, account: CredentialID? = nil, reason: String, underlying: (any Error & Sendable)? = nil,
        retryable: Bool = false, accountFailures: [SignOutError] = []
    ) {
        self.code = code
        self.account = account
        self.reason = reason
        self.underlying = underlying
        self.isRetryable = retryable
        self.accountFailures = accountFailures
    }

    public var description: String { reason }
}

/// The result of a sign-out: what happened on this device and at the provider, step by step.
public enum SignOutResult: Sendable, CustomStringConvertible {
    /// Signed out here, and every server step succeeded (or did not apply).
    case complete([SignOutStep])
    /// Signed out here, but some server step failed; each failure says whether it was queued
    /// for another try.
    case partial([SignOutStep])
    /// Still signed in: a server step failed under `serverFirst`, or local removal failed.
    case failed(SignOutError, [SignOutStep])

    /// Every step, for every account.
    public var steps: [SignOutStep] {
        switch self {
        case .complete(let steps), .partial(let steps), .failed(_, let steps): steps
        }
    }

    /// Whether the accounts are signed out on this device.
    public var signedOutLocally: Bool {
        if case .failed = self { false } else { true }
    }

    /// URLs a browser must open to end provider sessions.
    public var browserURLs: [URL] { steps.compactMap(\.browserURL) }

    /// The steps that failed or were queued.
    public var failures: [SignOutStep] { steps.filter { $0.status == .failed || $0.status == .queued } }

    /// Each account's outcome, in the store's order: whether it is signed out on this device, and
    /// why not when it is not.
    public var accounts: [AccountOutcome] {
        var order: [CredentialID] = []
        var byAccount: [CredentialID: [SignOutStep]] = [:]
        for step in steps {
            if byAccount[step.account] == nil { order.append(step.account) }
            byAccount[step.account, default: []].append(step)
        }
        var reasons: [CredentialID: SignOutError] = [:]
        if case .failed(let error, _) = self {
            for failure in error.accountFailures.isEmpty ? [error] : error.accountFailures {
                if let account = failure.account { reasons[account] = failure }
            }
        }
        return order.map { account in
            let steps = byAccount[account] ?? []
            return AccountOutcome(
                account: account, accountName: steps.first?.accountName, steps: steps, failure: reasons[account])
        }
    }

    /// One account's part of a sign-out.
    public struct AccountOutcome: Sendable {
        /// The account.
        public var account: CredentialID
        /// Its name, for reports.
        public var accountName: String?
        /// Its steps.
        public var steps: [SignOutStep]
        /// Why it is still signed in; `nil` when it is signed out on this device.
        public var failure: SignOutError?

        /// Whether it is signed out on this device.
        public var signedOutLocally: Bool { failure == nil }
    }

    public var description: String {
        switch self {
        case .complete: "complete"
        case .partial(let steps):
            "partial: \(steps.filter { $0.status == .failed || $0.status == .queued }.count) step(s) failed or queued"
        case .failed(let error, _): "failed: \(error)"
        }
    }
}
