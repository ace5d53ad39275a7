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

    /// Keeps a pending sign-in (`payload`: what completing it needs) under `handle` until
    /// `expiresAt`, unless `client` (a hash of the client's address, or empty when unknown)
    /// already has `limit` pending sign-ins that have not expired by `now`: then nothing is
    /// kept and the answer is `false`. (A bound, not a count to the unit: instances inserting
    /// for one client at the same moment may each pass it once.)
    func insertPendingSignIn(handle: String, payload: Data, expiresAt: Date, client: String, limit: Int, now: Date)
        async throws(StorageError) -> Bool

    /// The payload of the pending sign-in under `handle`, left in place, or `nil` when there
    /// is none or it expired before `now`.
    func pendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data?

    /// Removes the pending sign-in under `handle` and returns its payload, or `nil` when there
    /// is none or it expired before `now`: a pending sign-in is completed once.
    func takePendingSignIn(handle: String, now: Date) async throws(StorageError) -> Data?

    /// Removes pending sign-ins that expired before `now`, at most `limit`; returns how many.
    func removeExpiredPendingSignIns(now: Date, limit: Int) async throws(StorageError) -> Int

    /// Records that a logout token with `id` (its issuer and `jti`) was seen, to be remembered
    /// until `keepUntil` (when the token could no longer be accepted), and forgets those whose
    /// time passed before `now`. Returns `false` when `id` was already recorded (a replay): of
    /// several instances recording one id at once, exactly one gets `true`.
    func recordLogoutToken(_ id: String, keepUntil: Date, now: Date) async throws(StorageError) -> Bool

    /// Forgets a recorded logout token, so that the provider's retry is taken: for a logout
    /// that failed after its token was recorded.
    func forgetLogoutToken(_ id: String) async throws(StorageError)
}
