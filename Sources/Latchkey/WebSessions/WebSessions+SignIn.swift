public import Foundation
import Logging

/// A sign-in on its way to the provider: the cookie that binds it to the browser, and where to
/// send the browser.
public struct PendingWebSignIn: Sendable {
    /// The value of the short-lived sign-in cookie (a secret: the store keeps only its hash).
    public var cookie: String
    /// The provider's authorization URL, with `state`, `nonce` and the PKCE challenge.
    public var authorizationURL: URL
    /// When the pending sign-in expires (the cookie's lifetime).
    public var expiresAt: Date
}

/// A completed sign-in.
public struct CompletedWebSignIn: Sendable {
    /// The value of the new session cookie (a secret: the store keeps only its hash). It is new
    /// at every sign-in, so a session id planted before sign-in is never the signed-in one.
    public var cookie: String
    /// The session.
    public var session: WebSession
    /// The app's path the browser asked for before signing in.
    public var returnTo: String
}

extension WebSessions {
    /// Starts a sign-in: a fresh `state`, `nonce` and PKCE pair, kept in the store (sealed)
    /// under the hash of a new cookie value.
    ///
    /// - Parameters:
    ///   - returnTo: the app's path to come back to (anything else becomes `/`).
    ///   - client: the client's address (or any key an app limits by): it may have at most
    ///     ``WebSessionPolicy/pendingSignInsPerClient`` sign-ins pending. Only its hash is kept.
    /// - Throws: ``WebSignInError/Code/tooManySignIns`` beyond that bound.
    public func beginSignIn(returnTo: String? = nil, client: String? = nil) async throws(WebSignInError)
        -> PendingWebSignIn
    {
        let request: AuthorizationRequest
        do {
            let (provider, redirectURI, parameters) = (self.provider, self.redirectURI, self.authorization)
            request = try await store.capabilities.sharing { () async throws(ProviderError) in
                try await provider.authorizationRequest(redirectURI: redirectURI, parameters: parameters)
            }
        } catch {
            throw WebSignInError(.provider, reason: "The sign-in could not be started.", underlying: error)
        }
        let cookie = SessionSecret.make()
        let now = self.now
        let expiresAt = now.addingTimeInterval(policy.pendingSignInLifetime.timeInterval)
        do {
            let payload = try JSONEncoder().encode(PendingSignIn(request, returnTo: Self.safeReturnPath(returnTo)))
            let kept = try await storage.insertPendingSignIn(
                handle: SessionSecret.handle(of: cookie), payload: payload, expiresAt: expiresAt,
                client: SessionSecret.handle(of: client ?? ""), limit: policy.pendingSignInsPerClient, now: now)
            guard kept else {
                throw WebSignInError(
                    .tooManySignIns, reason: "Too many sign-ins were started from this address; try again later.")
            }
        } catch let error as WebSignInError {
            throw error
        } catch let error as StorageError {
            throw WebSignInError(.storage, reason: "The sign-in could not be kept.", underlying: error)
        } catch {
            throw WebSignInError(.storage, reason: "The sign-in could not be encoded.")
        }
        return PendingWebSignIn(cookie: cookie, authorizationURL: request.url, expiresAt: expiresAt)
    }

    /// Completes the sign-in the browser's sign-in cookie names with the redirect it came back
    /// with: the pending sign-in is taken from the store (once: a replayed redirect finds
    /// nothing), the redirect's `state` and `iss` checked, the code exchanged with the PKCE
    /// verifier, the ID token verified with the `nonce`, and the tokens stored as a new
    /// credential with a new session.
    public func completeSignIn(pendingCookie: String?, callbackURL: URL) async throws(WebSignInError)
        -> CompletedWebSignIn
    {
        guard let pendingCookie else {
            throw WebSignInError(.unknownSignIn, reason: "The browser has no sign-in in progress with this app.")
        }
        let pending: PendingSignIn
        do {
            let handle = SessionSecret.handle(of: pendingCookie)
            // Read first, taken only once the redirect is its own: a redirect another site sent
            // the browser to, with a `state` of its own, leaves the user's sign-in in place.
            guard let kept = try await storage.pendingSignIn(handle: handle, now: now) else {
                throw Self.unknownSignIn
            }
            let expected = try JSONDecoder().decode(PendingSignIn.self, from: kept).state
            let state = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "state" }?.value
            guard state == expected else {
                throw WebSignInError(
                    .stateMismatch,
                    reason: "The redirect does not belong to this browser's sign-in; it is still waiting to complete.")
            }
            guard let payload = try await storage.takePendingSignIn(handle: handle, now: now) else {
                throw Self.unknownSignIn
            }
            pending = try JSONDecoder().decode(PendingSignIn.self, from: payload)
        } catch let error as WebSignInError {
            throw error
        } catch let error as StorageError {
            throw WebSignInError(.storage, reason: "The sign-in could not be read.", underlying: error)
        } catch {
            throw WebSignInError(.unknownSignIn, reason: "The kept sign-in could not be read; sign in again.")
        }
        let credential: Credential
        do {
            let (provider, request) = (self.provider, pending.request)
            let token = try await store.capabilities.sharing { () async throws(ProviderError) in
                try await provider.completeAuthorization(request, callbackURL: callbackURL)
            }
            credential = try await provider.store(token, in: store, tags: [:], makeDefault: false, separate: true)
        } catch {
            throw WebSignInError(
                error.code == .storage ? .storage : .provider, reason: "The sign-in did not complete.",
                underlying: error)
        }
        return try await startSession(for: credential, returnTo: pending.returnTo)
    }

    /// The browser's sign-in is not (or no longer) kept.
    private static var unknownSignIn: WebSignInError {
        WebSignInError(.unknownSignIn, reason: "The sign-in expired or was already completed; sign in again.")
    }

    /// Makes a new session for a stored sign-in. A session that cannot be written leaves no
    /// grant alive: the credential is signed out (its tokens revoked, or queued).
    private func startSession(for credential: Credential, returnTo: String) async throws(WebSignInError)
        -> CompletedWebSignIn
    {
        let cookie = SessionSecret.make()
        let now = self.now
        do {
            guard let stored = try await store.credential(for: credential.id) else {
                throw StorageError(.credentialNotFound, reason: "The signed-in credential was removed at once.")
            }
            let claims = stored.token.idToken.flatMap(UnverifiedClaims.read) ?? [:]
            let session = WebSession(
                handle: SessionSecret.handle(of: cookie), credentialID: credential.id,
                issuer: stored.metadata.issuer, subject: claims["sub"]?.stringValue ?? stored.metadata.subject,
                providerSessionID: claims["sid"]?.stringValue, createdAt: now, lastSeenAt: now,
                expiresAt: now.addingTimeInterval(policy.absoluteLifetime.timeInterval))
            try await storage.insertWebSession(session)
            logger.debug("signed in", metadata: ["credential": "\(credential.id)"])
            return CompletedWebSignIn(cookie: cookie, session: session, returnTo: returnTo)
        } catch {
            _ = await store.signOut(.account(credential.id), options: Self.endingOptions)
            throw WebSignInError(.storage, reason: "The session could not be stored.", underlying: error)
        }
    }
}
