public import Foundation
import Logging

/// What a ``Credential`` needs from the provider its tokens came from. ``OpenIDProvider``
/// implements it for standards-based providers; other providers (Amazon Cognito's own API)
/// implement it over their wire protocol.
public protocol IdentityProvider: Sendable {
    /// The issuer and client the provider's tokens belong to.
    var identity: ProviderIdentity { get }

    /// Fetches what a refresh of `token` needs besides the token endpoint's answer (metadata,
    /// the keys that verify a new ID token), so that nothing can fail between spending a
    /// refresh token and storing its successor.
    func prepareRefresh(of token: Token) async throws(ProviderError)

    /// Gets new tokens for `token`, usually by sending its refresh token to the token endpoint
    /// (a provider with sessions may mint them through the session instead), and returns them
    /// as they came, merged over `token`: a new ID token in the answer is **not verified yet**
    /// (see ``verifyRefreshedIDToken(of:previous:)``). An answer refused as a whole that carried
    /// a new refresh token is ``RefreshAnswer/refused(_:rotatedRefreshToken:)``: the credential
    /// keeps that token. When nothing can get new tokens any more (a rejected refresh token), it
    /// throws ``ProviderError/Code/signInRequired``.
    func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> RefreshAnswer

    /// Gets an access token for `resource` alone (RFC 8707 resource indicators), for `scopes`
    /// or all the grant's, with `token`'s refresh token, and returns the answer merged over
    /// `token` as ``exchangeRefreshToken(of:)`` does: its access token is the resource's.
    /// Throws ``ProviderError/Code/unsupported`` when the provider has no such thing.
    func exchangeRefreshToken(of token: Token, resource: String?, scopes: [String]?) async throws(ProviderError)
        -> RefreshAnswer

    /// Verifies the ID token a refresh returned (`refreshed.idToken`), against the access token
    /// it came with and the account of `previous`.
    func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError)

    /// Revokes one token (RFC 7009 or the provider's equivalent). Revoking a token the provider
    /// does not know is a success.
    func revoke(_ value: String, kind: TokenKind) async throws(ProviderError)

    /// The signed-in user's claims.
    func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue]

    /// The signed-in user's claims, asked for with the access token of `token` (and, for tokens
    /// bound to the account's key, a DPoP proof).
    func userInfo(for token: Token) async throws(ProviderError) -> [String: JSONValue]

    /// What the provider says about a token (RFC 7662).
    func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection

    /// Signs the user out on every device: the provider invalidates all the user's tokens.
    /// Throws ``ProviderError/Code/unsupported`` when the provider has no such mechanism.
    func globalSignOut(accessToken: String) async throws(ProviderError)

    /// Signs the user out on every device with `token`'s access token (and, for tokens bound
    /// to the account's key, a DPoP proof).
    func globalSignOut(for token: Token) async throws(ProviderError)

    /// Ends the provider's session for this sign-in (RP-initiated logout). Returns `nil` when
    /// that happened server to server, or a URL a browser must open to finish it. Throws
    /// ``ProviderError/Code/unsupported`` when the provider has no such endpoint.
    func endSession(idToken: String?) async throws(ProviderError) -> URL?

    /// The kinds of token the provider can revoke one by one. The others it revokes only
    /// together with the refresh token (Amazon Cognito's access tokens, say).
    var revocableKinds: Set<TokenKind> { get }

    /// Whether the provider has a global sign-out. Throws when that cannot be known now (its
    /// metadata cannot be fetched), which is not the same as "no".
    func supportsGlobalSignOut() async throws(ProviderError) -> Bool

    /// Hands a store's storage what the provider learned outside any store's call (the DPoP
    /// nonces a sign-in got, say), when a sign-in is stored there. During a store's calls a
    /// provider shares through ``StorageCapabilities/current`` as it goes. By default nothing.
    func share(with capabilities: StorageCapabilities) async

    /// Fetches what the provider publishes (its metadata, its key set) from the provider, not
    /// from what a store kept, and keeps it in the calling store's storage: for a provider that
    /// fixed its documents. By default nothing.
    func fetchPublishedDocuments() async throws(ProviderError)
}

extension IdentityProvider {
    public func prepareRefresh(of token: Token) async throws(ProviderError) {}

    public func share(with capabilities: StorageCapabilities) async {}

    public func fetchPublishedDocuments() async throws(ProviderError) {}

    public func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {}

    /// Refreshes `token` on its own: prepares, exchanges the refresh token and verifies a new ID
    /// token. Nothing is stored, and nothing keeps two callers from spending the same refresh
    /// token: applications use ``Credential/accessToken(minimumValidity:)`` or
    /// ``Credential/refresh()``, which store the answer first and share one refresh among every
    /// caller. Package-only, for tests that play a writer without a lease.
    package func refresh(_ token: Token) async throws(ProviderError) -> Token {
        try await prepareRefresh(of: token)
        let refreshed = try await exchangeRefreshToken(of: token).token()
        if refreshed.idToken != token.idToken {
            try await verifyRefreshedIDToken(of: refreshed, previous: token)
        }
        return refreshed
    }

    /// The user's claims, asked for with `token`'s access token as a bearer token.
    /// Throws ``ProviderError/Code/unsupported``: only standards-based providers take resource
    /// indicators.
    public func exchangeRefreshToken(of token: Token, resource: String?, scopes: [String]?) async throws(ProviderError)
        -> RefreshAnswer
    {
        throw ProviderError(
            .unsupported, endpoint: .token, reason: "The provider does not issue tokens for single resources.")
    }

    public func userInfo(for token: Token) async throws(ProviderError) -> [String: JSONValue] {
        guard let accessToken = token.accessToken else {
            throw ProviderError(.unsupported, endpoint: .userinfo, reason: "The credential has no access token.")
        }
        return try await userInfo(accessToken: accessToken)
    }

    /// Signs out everywhere with `token`'s access token as a bearer token.
    public func globalSignOut(for token: Token) async throws(ProviderError) {
        guard let accessToken = token.accessToken else {
            throw ProviderError(.unsupported, endpoint: .globalSignOut, reason: "Nothing to sign out with.")
        }
        try await globalSignOut(accessToken: accessToken)
    }

    public func globalSignOut(accessToken: String) async throws(ProviderError) {
        throw ProviderError(.unsupported, endpoint: .globalSignOut, reason: "The provider has no global sign-out.")
    }

    public func endSession(idToken: String?) async throws(ProviderError) -> URL? {
        throw ProviderError(.unsupported, endpoint: .endSession, reason: "The provider has no end-session endpoint.")
    }

    public var revocableKinds: Set<TokenKind> { [.accessToken, .refreshToken, .deviceSecret] }

    public func supportsGlobalSignOut() async throws(ProviderError) -> Bool { false }

    /// The live handle of a stored credential whose tokens came from this provider. Every call
    /// for the same credential returns the same handle while one is in use, so concurrent
    /// callers share one refresh.
    public func credential(_ id: CredentialID, in store: CredentialStore) async -> Credential {
        await store.credential(id, provider: self)
    }

    /// Stores the tokens of a sign-in and returns their handle: this provider is registered with
    /// the store (so sign-out and the outbox reach it later), and an account whose token has no
    /// ID token is named from userinfo.
    ///
    /// The same account signing in again (the same issuer, client and subject) keeps its id, tags
    /// and default: its tokens are replaced, and its old grant is revoked (queued in the outbox
    /// when the provider cannot be reached). Tokens that cannot be stored are revoked rather
    /// than left alive with nothing holding them.
    public func store(
        _ token: Token, in store: CredentialStore, tags: [String: String] = [:], makeDefault: Bool = false
    ) async throws(ProviderError) -> Credential {
        try await self.store(token, in: store, tags: tags, makeDefault: makeDefault, separate: false)
    }

    /// Stores a sign-in; with `separate`, always as a new credential (a web session's own grant).
    ///
    /// A sign-in cancelled once the provider answered (Ctrl-C) keeps nothing and leaves no grant
    /// alive: its tokens are revoked, or their revocation queued in the outbox. Once storing
    /// has begun it finishes (``Shielded``), cancelled or not.
    func store(
        _ token: Token, in store: CredentialStore, tags: [String: String], makeDefault: Bool, separate: Bool
    ) async throws(ProviderError) -> Credential {
        guard !Task.isCancelled else {
            await Shielded.run { await store.retire(token, replacedBy: nil, account: nil, provider: self) }
            throw ProviderError(
                .cancelled,
                reason:
                    "The sign-in was cancelled after the provider answered; the grant it issued was revoked (or its revocation queued)."
            )
        }
        return try await Shielded.run { () async throws(ProviderError) in
            let claims = await store.capabilities.sharing { await self.accountClaims(of: token) }
            await store.register(self)
            await store.share(learnedBy: self)
            let stored: StoredCredential
            do throws(StorageError) {
                stored = try await store.storeSignIn(
                    token, accountClaims: claims, tags: tags, makeDefault: makeDefault, provider: self,
                    separate: separate)
            } catch {
                throw .storage(error)
            }
            return await self.credential(stored.id, in: store)
        }
    }

    /// Revokes the tokens of a sign-in that will not be kept (its ID token was rejected, say), so
    /// that the grant the provider just issued does not stay alive with nothing holding it: the
    /// refresh token, or without one the access token. A failure is logged, not thrown: the
    /// caller's own error is the one to report.
    func discard(_ token: Token, logger: Logger) async {
        let kind: TokenKind = token.refreshToken != nil ? .refreshToken : .accessToken
        guard token.value(of: kind) != nil else { return }
        if case .failed(let error)? = await RevocationFanOut.revoke([kind], of: token, at: self)[kind] {
            logger.notice(
                "the tokens of a rejected sign-in could not be revoked",
                metadata: ["kind": "\(kind)", "error": "\(error)"])
        }
    }

    /// The account's claims from userinfo when `token` has no ID token (a password grant at
    /// many providers, or a provider that is OAuth only), so that the account has a name.
    /// `nil` when the token has an ID token, or userinfo cannot tell: the sign-in goes on.
    public func accountClaims(of token: Token) async -> [String: JSONValue]? {
        guard token.idToken == nil, token.accessToken != nil else { return nil }
        return try? await userInfo(for: token)
    }
}

/// An introspection answer (RFC 7662 §2.2).
public struct Introspection: Sendable, Hashable {
    /// Whether the token is active.
    public var active: Bool
    /// Every field of the answer.
    public var fields: [String: JSONValue]

    /// Creates an answer.
    public init(active: Bool, fields: [String: JSONValue] = [:]) {
        self.active = active
        self.fields = fields
    }
}
