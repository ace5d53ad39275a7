public import Foundation

/// A signed-in browser of a web app: what its session cookie stands for.
///
/// The cookie holds a random secret; the store keeps only its SHA-256 (``handle``), so that
/// someone who reads the database cannot take over a session. Each session has a credential of
/// its own in the ``CredentialStore`` (two browsers of one user are two grants), found by
/// ``credentialID``; the provider's session (`sid`) and subject index it for back-channel logout.
public struct WebSession: Sendable, Hashable, Codable {
    /// The SHA-256 of the cookie's secret, in lowercase hex: the session's key in the store.
    public var handle: String
    /// The credential the sign-in stored.
    public var credentialID: CredentialID
    /// The provider's issuer.
    public var issuer: String
    /// The ID token's `sub`.
    public var subject: String?
    /// The ID token's `sid`: the provider's session, which a back-channel logout names.
    public var providerSessionID: String?
    /// When the user signed in.
    public var createdAt: Date
    /// When a request last used the session (updated at most once a minute, say: see
    /// ``WebSessionPolicy/touchInterval``).
    public var lastSeenAt: Date
    /// When the session ends whatever happens (its absolute lifetime).
    public var expiresAt: Date

    /// Creates a session record.
    public init(
        handle: String, credentialID: CredentialID, issuer: String, subject: String?, providerSessionID: String?,
        createdAt: Date, lastSeenAt: Date, expiresAt: Date
    ) {
        self.handle = handle
        self.credentialID = credentialID
        self.issuer = issuer
        self.subject = subject
        self.providerSessionID = providerSessionID
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
    }

    /// The columns a storage keeps a session in, in the order both backends read them.
    package static let storedColumns =
        "handle, credential_id, issuer, subject, sid, created_at, last_seen_at, expires_at"
}

/// How long web sessions and pending sign-ins live.
public struct WebSessionPolicy: Sendable, Hashable {
    /// A session unused for this long is signed out.
    public var idleLifetime: Duration
    /// A session is signed out this long after its sign-in, used or not.
    public var absoluteLifetime: Duration
    /// How long a browser has to come back from the provider's sign-in page.
    public var pendingSignInLifetime: Duration
    /// A session's last use is written at most this often (a write per request would cost more
    /// than the read): the idle lifetime is kept to within this much.
    public var touchInterval: Duration
    /// How old a logout token without `exp` may be, by its `iat` (Glewlwyd's tokens have no
    /// `exp`: without this bound, a captured token would be good forever). Token ids are
    /// remembered for at least this long plus the leeway, so a replay inside the window is refused.
    public var logoutTokenMaximumAge: Duration
    /// The most sign-ins one client address may have pending at once: an anonymous visitor
    /// cannot fill the shared store by asking for sign-in pages (each kept until it expires).
    /// Generous, as users behind one NAT share an address.
    public var pendingSignInsPerClient: Int

    /// Creates a policy: 8 hours idle, 24 hours at most, 10 minutes to sign in, a last use
    /// written at most once a minute, logout tokens without `exp` taken for 2 minutes, at most
    /// 50 sign-ins pending per client address.
    public init(
        idleLifetime: Duration = .seconds(8 * 3_600), absoluteLifetime: Duration = .seconds(24 * 3_600),
        pendingSignInLifetime: Duration = .seconds(600), touchInterval: Duration = .seconds(60),
        logoutTokenMaximumAge: Duration = .seconds(120), pendingSignInsPerClient: Int = 50
    ) {
        self.idleLifetime = idleLifetime
        self.absoluteLifetime = absoluteLifetime
        self.pendingSignInLifetime = pendingSignInLifetime
        self.touchInterval = touchInterval
        self.logoutTokenMaximumAge = logoutTokenMaximumAge
        self.pendingSignInsPerClient = pendingSignInsPerClient
    }
}

/// What a session lookup decides from a stored record and the time: a pure value.
public enum WebSessionStatus: Sendable, Hashable {
    /// Signed in; `touch` says whether to write the last use now.
    case active(touch: Bool)
    /// Unused for longer than the idle lifetime.
    case idle
    /// Past its absolute lifetime.
    case expired

    /// Decides the status of `session` at `now` under `policy`.
    public init(_ session: WebSession, now: Date, policy: WebSessionPolicy) {
        if now >= session.expiresAt {
            self = .expired
        } else if now.timeIntervalSince(session.lastSeenAt) >= policy.idleLifetime.timeInterval {
            self = .idle
        } else {
            self = .active(touch: now.timeIntervalSince(session.lastSeenAt) >= policy.touchInterval.timeInterval)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    package var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
