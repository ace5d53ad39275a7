public import Foundation
import Logging

/// What signing a web session out did.
public struct WebSignOutResult: Sendable {
    /// The session that ended, or `nil` when the cookie named none (already signed out).
    public var session: WebSession?
    /// Each step of signing its credential out: revocations sent, or queued in the outbox when
    /// the provider could not be reached.
    public var signOut: SignOutResult?
    /// Where to send the browser to end the user's session at the provider (RP-initiated
    /// logout), or `nil` when the provider has no end-session endpoint.
    public var endSessionURL: URL?
}

/// What a back-channel logout ended.
public struct BackChannelLogoutResult: Sendable {
    /// The verified token's claims.
    public var claims: LogoutTokenClaims
    /// The sessions this instance ended (none for an unknown `sid`: still a success).
    public var ended: [WebSession]
    /// Sign-outs whose local removal failed (the session itself is ended).
    public var failures: [SignOutResult]
}

extension WebSessions {
    /// How a session's credential is signed out: revoke its tokens on this device only (the
    /// provider's session is ended by the browser, or already ended), queueing what the
    /// provider cannot take now, and remove it.
    static var endingOptions: SignOutOptions {
        SignOutOptions(global: false, endProviderSession: false, revokeTokens: true, policy: .alwaysLocal)
    }

    /// Signs out the session whose cookie holds `cookie` (after the caller checked its CSRF
    /// token): the session ends at once on every instance, its tokens are revoked (queued when
    /// the provider is unreachable), and the result carries the provider's end-session URL
    /// with `id_token_hint` and the app's post-logout redirect URI.
    public func signOut(cookie: String) async throws(StorageError) -> WebSignOutResult {
        guard let session = try await storage.removeWebSession(handle: SessionSecret.handle(of: cookie)) else {
            return WebSignOutResult(session: nil, signOut: nil, endSessionURL: nil)
        }
        let idToken = try? await store.credential(for: session.credentialID)?.token.idToken
        let result = await store.signOut(.account(session.credentialID), options: Self.endingOptions)
        let (provider, postLogout) = (self.provider, postLogoutRedirectURI)
        let url = try? await store.capabilities.sharing { () async throws(ProviderError) in
            try await provider.endSessionURL(idTokenHint: idToken ?? nil, postLogoutRedirectURI: postLogout)
        }
        logger.debug("signed out", metadata: ["credential": "\(session.credentialID)", "result": "\(result)"])
        return WebSignOutResult(session: session, signOut: result, endSessionURL: url ?? nil)
    }

    /// Carries out an OpenID Connect Back-Channel Logout (§2.5–2.8): verifies `logoutToken`,
    /// records its `jti` in the store (a replay, to this instance or another, is refused), and
    /// ends every session of its issuer with its `sid` (and `sub`, when both are given), or
    /// every session of its `sub` — each one once, fleet-wide, its tokens revoked or queued.
    ///
    /// A token for a `sid` no session has is a success that ends nothing (§2.8).
    public func backChannelLogout(_ logoutToken: String) async throws(BackChannelLogoutError)
        -> BackChannelLogoutResult
    {
        let claims: LogoutTokenClaims
        do {
            let (provider, maximumAge) = (self.provider, policy.logoutTokenMaximumAge.timeInterval)
            claims = try await store.capabilities.sharing { () async throws(LogoutTokenError) in
                try await provider.verifyLogoutToken(logoutToken, maximumAge: maximumAge)
            }
        } catch  where error.reason == .keysUnavailable {
            throw BackChannelLogoutError(.unavailable, underlying: error)
        } catch {
            logger.debug("logout token refused", metadata: ["reason": "\(error.reason)"])
            throw BackChannelLogoutError(.refused, refusal: error)
        }
        // The verifier checked iss, jti, iat and (sub or sid).
        let issuer = claims.issuer ?? ""
        let id = issuer + " " + (claims.id ?? "")
        let keepUntil = Self.replayWindowEnd(of: claims, policy: policy, leeway: provider.configuration.leeway)
        do {
            guard try await storage.recordLogoutToken(id, keepUntil: keepUntil, now: now) else {
                throw BackChannelLogoutError(.replayed)
            }
        } catch let error as BackChannelLogoutError {
            throw error
        } catch {
            throw BackChannelLogoutError(.unavailable, underlying: error)
        }
        do {
            let sessions = try await storage.webSessions(
                issuer: issuer, providerSessionID: claims.sessionID, subject: claims.subject)
            var ended: [WebSession] = []
            var failures: [SignOutResult] = []
            await withTaskGroup(of: (WebSession, SignOutResult)?.self) { group in
                for session in sessions { group.addTask { await self.end(session).map { (session, $0) } } }
                for await outcome in group {
                    guard let (session, result) = outcome else { continue }
                    ended.append(session)
                    if !result.signedOutLocally { failures.append(result) }
                }
            }
            logger.debug("back-channel logout", metadata: ["ended": "\(ended.count)"])
            return BackChannelLogoutResult(claims: claims, ended: ended, failures: failures)
        } catch {
            // Nothing was ended for this token: let the provider's retry through.
            try? await storage.forgetLogoutToken(id)
            throw BackChannelLogoutError(.unavailable, underlying: error)
        }
    }

    /// Until when a logout token's `jti` must be remembered: as long as the token could be
    /// taken (its `exp`, or `iat` plus the maximum age), plus the leeway.
    static func replayWindowEnd(of claims: LogoutTokenClaims, policy: WebSessionPolicy, leeway: TimeInterval) -> Date {
        let end =
            claims.expiresAt
            ?? (claims.issuedAt ?? Date()).addingTimeInterval(policy.logoutTokenMaximumAge.timeInterval)
        return end.addingTimeInterval(leeway)
    }

    /// Ends a session: removes it (only one caller fleet-wide gets it) and signs its
    /// credential out. `nil` when another caller ended it first.
    @discardableResult
    func end(_ session: WebSession) async -> SignOutResult? {
        do {
            guard try await storage.removeWebSession(handle: session.handle) != nil else { return nil }
        } catch {
            logger.notice("a session could not be ended", metadata: ["error": "\(error)"])
            return nil
        }
        let result = await store.signOut(.account(session.credentialID), options: Self.endingOptions)
        if !result.signedOutLocally {
            logger.notice(
                "an ended session's credential is still stored",
                metadata: ["credential": "\(session.credentialID)", "result": "\(result)"])
        }
        return result
    }
}
