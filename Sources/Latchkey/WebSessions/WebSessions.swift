public import Foundation
public import Logging

/// The sign-in sessions of a web app (or a backend for a mobile app), kept in a
/// ``CredentialStore`` that every instance of the app shares.
///
/// Framework-neutral: a web framework's module (`LatchkeyHummingbird`) turns requests into the
/// calls below and their answers into responses.
///
/// - Sign-in: ``beginSignIn(returnTo:)`` keeps the pending sign-in (its `state`, `nonce` and
///   PKCE verifier) in the store under a short-lived cookie, so the callback may reach any
///   instance; ``completeSignIn(pendingCookie:callbackURL:)`` checks the redirect, exchanges the
///   code, verifies the ID token and stores the tokens as a credential of the session's own.
/// - Requests: ``session(cookie:)`` reads the session from the store at every request, so a
///   session ended on one instance is ended on all of them at once.
/// - Sign-out: ``signOut(cookie:)`` ends the session, revokes its tokens (queued when the
///   provider is unreachable) and gives the provider's end-session URL for the browser.
/// - Back-channel logout: ``backChannelLogout(_:)`` verifies the provider's logout token,
///   refuses a replay fleet-wide, and ends every matching session the same way.
public final class WebSessions: Sendable {
    /// Where the sessions' credentials are.
    public let store: CredentialStore
    /// The provider users sign in with.
    public let provider: OpenIDProvider
    /// The app's callback URL, registered with the provider.
    public let redirectURI: URL
    /// Where the provider sends the browser after its sign-out, registered with it; `nil` to
    /// leave the browser on the provider's page.
    public let postLogoutRedirectURI: URL?
    /// Lifetimes.
    public let policy: WebSessionPolicy
    /// What each sign-in asks the provider for: by default `openid profile email`, and no
    /// `offline_access` unless asked (then with `prompt=consent`, OpenID Connect Core §11).
    public let authorization: AuthorizationParameters

    /// The scopes a web sign-in asks for unless told otherwise.
    public static let defaultScopes = ["openid", "profile", "email"]
    let storage: any WebSessionStorage
    let logger: Logger

    /// Creates the sessions of an app.
    ///
    /// - Throws: ``StorageError/Code/unsupported`` when the store's storage keeps no web
    ///   sessions (every storage Latchkey ships does).
    ///
    /// - Parameter authorization: what each sign-in asks for (scopes, `prompt`, `max_age`,
    ///   `acr_values`, resources); scopes left `nil` are ``defaultScopes``, not the provider
    ///   configuration's.
    public init(
        store: CredentialStore, provider: OpenIDProvider, redirectURI: URL, postLogoutRedirectURI: URL? = nil,
        policy: WebSessionPolicy = WebSessionPolicy(),
        authorization: AuthorizationParameters = AuthorizationParameters(), logger: Logger? = nil
    ) throws(StorageError) {
        guard let storage = store.capabilities.webSessions else {
            throw StorageError(.unsupported, reason: "This store's storage keeps no web sessions.")
        }
        self.store = store
        self.provider = provider
        self.redirectURI = redirectURI
        self.postLogoutRedirectURI = postLogoutRedirectURI
        self.policy = policy
        var authorization = authorization
        authorization.scopes = authorization.scopes ?? Self.defaultScopes
        self.authorization = authorization
        self.storage = storage
        self.logger = logger ?? Logger(label: "latchkey.web", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// The current date, by the store's clock.
    var now: Date { store.clock.date }

    // MARK: Requests

    /// The signed-in session whose cookie holds `cookie`, or `nil` when there is none, it was
    /// ended (here or on another instance), or it outlived its idle or absolute lifetime (it
    /// is then ended, its tokens revoked).
    ///
    /// - Throws: the store's error: a store that cannot be read is not "signed out".
    public func session(cookie: String) async throws(StorageError) -> WebSession? {
        let handle = SessionSecret.handle(of: cookie)
        guard let session = try await storage.webSession(handle: handle) else { return nil }
        let now = self.now
        switch WebSessionStatus(session, now: now, policy: policy) {
        case .active(let touch):
            if touch { try await storage.touchWebSession(handle: handle, at: now) }
            return session
        case .idle, .expired:
            _ = await end(session)
            return nil
        }
    }

    /// The live handle of a session's credential: its access token is refreshed once for the
    /// whole fleet when it runs out.
    public func credential(for session: WebSession) async -> Credential {
        await store.credential(session.credentialID, provider: provider)
    }

    /// The CSRF token a form of the session whose cookie holds `cookie` must send back.
    public func csrfToken(cookie: String) -> String { SessionSecret.csrfToken(for: cookie) }

    /// Whether `token` is the CSRF token of the session whose cookie holds `cookie`.
    public func isValidCSRFToken(_ token: String?, cookie: String) -> Bool {
        guard let token else { return false }
        return SessionSecret.isCSRFToken(token, for: cookie)
    }

    /// Ends every session past its lifetime, at most `limit` at a time; returns how many.
    /// An app calls it now and then (a session is also ended when a request finds it stale).
    public func endStaleSessions(limit: Int = 100) async throws(StorageError) -> Int {
        let now = self.now
        let stale = try await storage.staleWebSessions(
            expiredAt: now, idleBefore: now.addingTimeInterval(-policy.idleLifetime.timeInterval), limit: limit)
        var ended = 0
        for session in stale where await end(session) != nil { ended += 1 }
        return ended
    }

    /// Removes the pending sign-ins that expired (browsers that never came back), at most
    /// `limit` at a time; returns how many.
    public func removeExpiredSignIns(limit: Int = 1_000) async throws(StorageError) -> Int {
        try await storage.removeExpiredPendingSignIns(now: now, limit: limit)
    }

    /// What an app runs on a schedule (`LatchkeyHummingbird`'s `WebSessionSweeper` does, every
    /// minute): ends the sessions past their lifetime and removes the expired pending sign-ins,
    /// each until none is left. Returns how many of each.
    public func sweep(batch: Int = 1_000) async throws(StorageError) -> (sessions: Int, signIns: Int) {
        var sessions = 0
        var signIns = 0
        while true {
            let ended = try await endStaleSessions(limit: batch)
            sessions += ended
            if ended < batch { break }
        }
        while true {
            let removed = try await removeExpiredSignIns(limit: batch)
            signIns += removed
            if removed < batch { break }
        }
        return (sessions, signIns)
    }

    /// A path of this app to go back to: `path` when it is one (starts with a single `/`, no
    /// backslash, no scheme), `/` otherwise, so that a sign-in never redirects to another site.
    public static func safeReturnPath(_ path: String?) -> String {
        guard let path, path.hasPrefix("/"), !path.hasPrefix("//"), !path.contains("\\"),
            !path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
            path.utf8.count <= 2_048
        else { return "/" }
        return path
    }
}
