public import Foundation

/// Whose sign-out.
public enum SignOutScope: Sendable, Hashable {
    /// The default (active) account.
    case current
    /// One account.
    case account(CredentialID)
    /// Every account in the store.
    case all
}

/// What happens when a server step fails.
public enum SignOutPolicy: String, Sendable, Hashable, CaseIterable {
    /// Sign out on this device whatever the server says; failed revocations go to the outbox
    /// and the result is `.partial` (Amplify's behaviour, without its live-token hole).
    case alwaysLocal = "always-local"
    /// Keep the local tokens and fail when a server step fails (the Cognito walkthrough's
    /// behaviour): the user is still signed in and can try again.
    case serverFirst = "server-first"
}

/// A named step of the application's, run during sign-out (after the server steps, before
/// local removal) and reported like the others: deregistering a push token, say.
public struct SignOutHook: Sendable {
    /// The step's name in the report.
    public var name: String
    /// The work; it receives the credential being signed out.
    public var run: @Sendable (StoredCredential) async throws -> Void

    /// Creates a hook.
    public init(_ name: String, run: @escaping @Sendable (StoredCredential) async throws -> Void) {
        self.name = name
        self.run = run
    }
}

/// How to sign out.
public struct SignOutOptions: Sendable {
    /// Sign out on every device (the provider's global sign-out).
    public var global: Bool
    /// End the provider's session too (RP-initiated logout).
    public var endProviderSession: Bool
    /// Revoke the tokens (RFC 7009). On by default.
    public var revokeTokens: Bool
    /// What a failed server step means.
    public var policy: SignOutPolicy
    /// The application's own steps.
    public var hooks: [SignOutHook]

    /// Creates options; the defaults revoke the tokens and sign out on this device only.
    public init(
        global: Bool = false, endProviderSession: Bool = false, revokeTokens: Bool = true,
        policy: SignOutPolicy = .alwaysLocal, hooks: [SignOutHook] = []
    ) {
        self.global = global
        self.endProviderSession = endProviderSession
        self.revokeTokens = revokeTokens
        self.policy = policy
        self.hooks = hooks
    }

    /// This device: revoke the tokens, remove them.
    public static var local: SignOutOptions { SignOutOptions() }
    /// Every device: global sign-out, revoke, remove.
    public static var global: SignOutOptions { SignOutOptions(global: true) }
}

/// One step of a sign-out, for one account.
public struct SignOutStep: Sendable, CustomStringConvertible {
    /// Which step.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// Refreshing an expired access token before a global sign-out.
        case refresh
        /// The provider's global sign-out.
        case globalSignOut
        /// Revoking one token.
        case revoke(TokenKind)
        /// Ending the provider's session.
        case endSession
        /// An application hook.
        case hook(String)
        /// Removing the credential from this device.
        case localRemoval

        /// Ending a Ping journey's SSO session (AM's session logout): the "revocation" of the
        /// session token, queued in the outbox like any revocation when it fails.
        public static var sessionLogout: Kind { .revoke(.sessionToken) }

        /// The step's name, as reports and the CLI show it.
        public var description: String {
            switch self {
            case .refresh: "refresh"
            case .globalSignOut: "global-signout"
            case .revoke(.accessToken): "revoke-access-token"
            case .revoke(.refreshToken): "revoke-refresh-token"
            case .revoke(.deviceSecret): "revoke-device-secret"
            case .revoke(.idToken): "revoke-id-token"
            case .revoke(.sessionToken): "session-logout"
            case .endSession: "end-session"
            case .hook(let name): "hook:\(name)"
            case .localRemoval: "local-removal"
            }
        }
    }

    /// What became of it.
    public enum Status: String, Sendable, Hashable {
        case succeeded, failed, skipped, queued
    }

    /// The account.
    public var account: CredentialID
    /// The account's name (username, email or subject), for reports.
    public var accountName: String?
    /// Which step.
    public var kind: Kind
    /// What became of it.
    public var status: Status
    /// Why it failed, was skipped or was queued (no secrets).
    public var reason: Reason?
    /// The error, when it failed or was queued.
    public var error: (any Error & Sendable)?
    /// Whether trying again later can help (failed and queued steps).
    public var isRetryable: Bool
    /// A URL a browser must open to finish the step (end-session at some providers).
    public var browserURL: URL?

    init(
        _ credential: StoredCredential, _ kind: Kind, _ status: Status, reason: Reason? = nil,
        error: (any Error & Sendable)? = nil, retryable: Bool = false, browserURL: URL? = nil
    ) {
        self.account = credential.id
        self.accountName = credential.metadata.displayName
        self.kind = kind
        self.status = status
        self.reason = reason
        self.error = error
        self.isRetryable = retryable
        self.browserURL = browserURL
    }

    public var description: String {
        var text = "\(accountName ?? account.rawValue): \(kind) \(status.rawValue)"
        if let reason { text += " (\(reason))" }
        return text
    }
}

extension SignOutStep {
    /// Why a step failed, was skipped or was queued: a code to compare, and a text to show.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// The reason, as a value to compare with `==`.
        public struct Code: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable {
                case failed, accessTokenStillValid, endsWithRefreshToken, unsupported, supportUnknown, needsBrowser,
                    noEndSessionEndpoint, alreadyRemoved, serverStepFailed, notQueued, noProvider, noAccessToken,
                    hookFailed
            }

            private let base: Base

            /// The step failed; the text is the error's description.
            public static let failed = Code(base: .failed)
            /// The refresh was not needed: the access token is still valid.
            public static let accessTokenStillValid = Code(base: .accessTokenStillValid)
            /// Not revoked on its own: the provider revokes it together with the refresh token.
            public static let endsWithRefreshToken = Code(base: .endsWithRefreshToken)
            /// The provider has no global sign-out; the grant was revoked and the session ended instead.
            public static let unsupported = Code(base: .unsupported)
            /// Whether the provider has a global sign-out could not be found out (it was unreachable).
            public static let supportUnknown = Code(base: .supportUnknown)
            /// The provider needs a browser to end its session: see ``SignOutStep/browserURL``.
            public static let needsBrowser = Code(base: .needsBrowser)
            /// The provider has no end-session endpoint.
            public static let noEndSessionEndpoint = Code(base: .noEndSessionEndpoint)
            /// The credential was no longer on this device.
            public static let alreadyRemoved = Code(base: .alreadyRemoved)
            /// Local removal was skipped: a server step failed under ``SignOutPolicy/serverFirst``.
            public static let serverStepFailed = Code(base: .serverStepFailed)
            /// A revocation could be neither sent nor queued: the account stays, so its token is not lost.
            public static let notQueued = Code(base: .notQueued)
            /// No provider is registered for the credential's issuer and client.
            public static let noProvider = Code(base: .noProvider)
            /// There was no valid access token to sign out with.
            public static let noAccessToken = Code(base: .noAccessToken)
            /// An application hook threw.
            public static let hookFailed = Code(base: .hookFailed)

            public var description: String { base.rawValue }
        }

        /// What kind of reason.
        public var code: Code
        /// The reason in words (no secrets).
        public var text: String

        /// Creates a reason.
        public init(_ code: Code, _ text: String) {
            self.code = code
            self.text = text
        }

        public var description: String { text }
    }
}

/// Why a sign-out left the user signed in.
public struct SignOutError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to compare with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case cancelled, storageFailed, noSuchAccount, serverStepFailed, localRemovalFailed,
                revocationNotQueued, damagedRecord
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

    /// Creates an error.
    public init(
        _ code: Code, account: CredentialID? = nil, reason: String, underlying: (any Error & Sendable)? = nil,
        retryable: Bool = false
    ) {
        self.code = code
        self.account = account
        self.reason = reason
        self.underlying = underlying
        self.isRetryable = retryable
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

    public var description: String {
        switch self {
        case .complete: "complete"
        case .partial(let steps):
            "partial: \(steps.filter { $0.status == .failed || $0.status == .queued }.count) step(s) failed or queued"
        case .failed(let error, _): "failed: \(error)"
        }
    }
}
