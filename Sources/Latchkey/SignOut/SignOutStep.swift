public import Foundation

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
        account: CredentialID, accountName: String?, _ kind: Kind, _ status: Status, reason: Reason? = nil,
        error: (any Error & Sendable)? = nil, retryable: Bool = false, browserURL: URL? = nil
    ) {
        self.account = account
        self.accountName = accountName
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
                    hookFailed, heldForGlobalSignOut, stillSignedIn
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
            /// Not sent: the global sign-out failed for now, and revoking would kill the tokens it
            /// needs to go through later. Queued after it (always-local), or kept (server-first).
            public static let heldForGlobalSignOut = Code(base: .heldForGlobalSignOut)
            /// A hook did not run: the account is still signed in on this device (a hook runs once
            /// the account has left it).
            public static let stillSignedIn = Code(base: .stillSignedIn)

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
