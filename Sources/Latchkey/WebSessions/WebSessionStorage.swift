public import Foundation

/// Where a web app's sessions, its pending sign-ins and the logout tokens it has seen are kept,
/// beside its credentials: in the same database, so that every instance of a fleet sees a
/// session end at once and a logout token's `jti` is seen once fleet-wide.
///
/// The in-memory, SQLite and PostgreSQL storages implement it. Sessions are keyed by the
/// SHA-256 of their cookie (``WebSession/handle``), never by the cookie itself; a pending
/// sign-in's secrets (its PKCE verifier and nonce) are sealed like tokens.
public protocol WebSessionStorage: Sendable {
    /// Adds a session.
    func insertWebSession(_ session: WebSession) async throws(StorageError)

    /// The session whose handle is `handle`, or `nil`.
    func webSession(handle: String) async throws(StorageError) -> WebSession?

    /// Records a use of the session at `date`.
    func touchWebSession(handle: String, at date: Date) async throws(StorageError)

    /// Removes the session and returns it, or `nil` when it was already gone: of several
    /// instances removing one session at once, exactly one gets it back (and signs it out).
    func removeWebSession(handle: String) async throws(StorageError) -> WebSession?

    /// The sessions of `issuer` whose `sid` is `providerSessionID` (when given) and whose
    /// subject is `subject` (when given).
    func webSessions(issuer: String, providerSessionID: String?, subject: String?) async throws(StorageError)
        -> [WebSession]

    /// The sessions past their absolute lifetime at `date`, or unused since `idleBefore`, at most `limit`.
    func staleWebSessions(expiredAt date: Date, idleBefore: Date, limit: Int) async throws(StorageError)
        -> [WebSession]

    /// Keeps a pending sign-in (`payload`: what completing it needs) under `handle` until `expiresAt`.
    func insertPendingSignIn(handle: String, payload: Data, expiresAt: Date) async throws(StorageError)

    /// Removes the pending sign-in under `handle` and returns its payload, or `nil` when there
    /// is none or it expired before `now`: a pending sign-in is completed once.
    func takePendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data?

    /// Records that a logout token with `id` (its issuer and `jti`) was seen, to be remembered
    /// until `keepUntil` (when the token could no longer be accepted), and forgets those whose
    /// time passed before `now`. Returns `false` when `id` was already recorded (a replay): of
    /// several instances recording one id at once, exactly one gets `true`.
    func recordLogoutToken(_ id: String, keepUntil: Date, now: Date) async throws(StorageError) -> Bool

    /// Forgets a recorded logout token, so that the provider's retry is taken: for a logout
    /// that failed after its token was recorded.
    func forgetLogoutToken(_ id: String) async throws(StorageError)
}
