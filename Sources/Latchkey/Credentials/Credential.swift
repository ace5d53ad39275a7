public import Foundation
import Logging

/// Which tokens to revoke.
public enum RevocationScope: String, Sendable, Hashable, CaseIterable {
    /// Every token the credential has, in parallel.
    case all
    /// The access token only: the refresh token and device secret stay usable.
    case accessToken = "access"
    /// The refresh token, and with it the access token (the grant ends).
    case refreshToken = "refresh"
    /// The device secret only.
    case deviceSecret = "device-secret"
}

/// The outcome of revoking one kind of token.
public enum RevocationOutcome: Sendable {
    /// The provider confirmed the revocation; the token left the stored credential.
    case revoked
    /// The revocation failed; the token stays where it was.
    case failed(ProviderError)
    /// The credential had no such token.
    case notPresent

    /// Whether the token is revoked.
    public var isRevoked: Bool { if case .revoked = self { true } else { false } }
}

/// What a revocation did, kind by kind (never only the first error).
public struct RevocationResult: Sendable {
    /// The outcome for each kind that was asked for.
    public var outcomes: [TokenKind: RevocationOutcome]
    /// Whether the credential was removed from the store because nothing usable was left.
    public var removedFromStore: Bool

    /// Whether every token asked for is revoked (or was not there).
    public var succeeded: Bool {
        outcomes.values.allSatisfy { if case .failed = $0 { false } else { true } }
    }

    /// The failures, by kind.
    public var failures: [TokenKind: ProviderError] {
        outcomes.compactMapValues { if case .failed(let error) = $0 { error } else { nil } }
    }
}

/// A stored credential together with the provider it came from: gets a fresh access token,
/// revokes, removes, asks for user info and introspection.
///
/// Get one from ``OpenIDProvider/signIn(_:scopes:into:tags:makeDefault:)`` or
/// ``OpenIDProvider/credential(_:in:)``; handles for the same credential are shared, so
/// concurrent ``accessToken(minimumValidity:)`` calls cause one refresh.
public actor Credential {
    /// The credential's id in its store.
    public nonisolated let id: CredentialID
    /// The store that holds it.
    public nonisolated let store: CredentialStore
    /// The provider its tokens came from.
    public nonisolated let provider: any IdentityProvider
    private let now: @Sendable () -> Date
    private var refreshing: Task<Result<Token, ProviderError>, Never>?

    /// The tag set on a credential whose refresh token was rejected.
    public static let needsSignInTag = "latchkey.needs-sign-in"

    /// Creates a handle. Prefer the provider's `credential(_:in:)`, which shares handles.
    public init(
        id: CredentialID, store: CredentialStore, provider: any IdentityProvider,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.id = id
        self.store = store
        self.provider = provider
        self.now = now
    }

    /// The credential as stored now.
    public func stored() async throws(ProviderError) -> StoredCredential {
        let stored: StoredCredential?
        do {
            stored = try await store.credential(for: id)
        } catch {
            throw .storage(error)
        }
        guard let stored else { throw .storage(.credentialNotFound(id)) }
        return stored
    }

    /// The current tokens.
    public var token: Token {
        get async throws(ProviderError) { try await stored().token }
    }

    /// An access token valid for at least `minimumValidity` seconds, refreshed first when needed.
    ///
    /// Concurrent callers share one refresh. A rotated refresh token is stored before the new
    /// access token is returned. A rejected refresh token throws
    /// ``ProviderError/Code/signInRequired`` and deletes nothing; network failures are
    /// retryable and delete nothing.
    ///
    /// For tokens that live less than twice `minimumValidity`, half their lifetime is used
    /// instead, so a provider's short-lived tokens are not refreshed on every call.
    public func accessToken(minimumValidity: TimeInterval = 60) async throws(ProviderError) -> String {
        let token = try await stored().token
        if let accessToken = token.accessToken, !needsRefresh(token, minimumValidity: minimumValidity) {
            return accessToken
        }
        let refreshed = try await sharedRefresh(minimumValidity: minimumValidity)
        guard let accessToken = refreshed.accessToken else {
            throw ProviderError(.invalidResponse, endpoint: .token, reason: "The refresh gave no access token.")
        }
        return accessToken
    }

    private func needsRefresh(_ token: Token, minimumValidity: TimeInterval) -> Bool {
        var margin = minimumValidity
        if let expiresAt = token.expiresAt {
            margin = min(margin, expiresAt.timeIntervalSince(token.issuedAt) / 2)
        }
        return token.expires(within: margin, at: now())
    }

    /// Refreshes now, whatever the access token's expiry.
    @discardableResult
    public func refresh() async throws(ProviderError) -> Token {
        try await sharedRefresh(minimumValidity: nil)
    }

    private func sharedRefresh(minimumValidity: TimeInterval?) async throws(ProviderError) -> Token {
        if let refreshing {
            store.logger.trace("joining the refresh in flight", metadata: ["credential": "\(id)"])
            return try await refreshing.value.get()
        }
        store.logger.debug("refreshing", metadata: ["credential": "\(id)"])
        let task = Task { await self.performRefresh(minimumValidity: minimumValidity) }
        refreshing = task
        let result = await task.value
        refreshing = nil
        switch result {
        case .success(let token):
            store.logger.debug(
                "refreshed",
                metadata: ["credential": "\(id)", "expiresAt": "\(token.expiresAt.map { "\($0)" } ?? "never")"])
        case .failure(let error):
            store.logger.debug("refresh failed", metadata: ["credential": "\(id)", "error": "\(error)"])
        }
        return try result.get()
    }

    private func performRefresh(minimumValidity: TimeInterval?) async -> Result<Token, ProviderError> {
        do throws(ProviderError) {
            let current = try await stored()
            // Another process sharing the store may have refreshed already.
            if let minimumValidity, current.token.accessToken != nil,
                !needsRefresh(current.token, minimumValidity: minimumValidity)
            {
                return .success(current.token)
            }
            let refreshed: Token
            do {
                refreshed = try await provider.refresh(current.token)
            } catch {
                if error.requiresSignIn {
                    var tags = current.metadata.tags
                    tags[Self.needsSignInTag] = "true"
                    _ = try? await store.setTags(tags, for: id)
                }
                throw error
            }
            do {
                try await store.update(id, token: refreshed)
                if current.metadata.tags[Self.needsSignInTag] != nil {
                    var tags = current.metadata.tags
                    tags[Self.needsSignInTag] = nil
                    try await store.setTags(tags, for: id)
                }
            } catch {
                throw .storage(error)
            }
            return .success(refreshed)
        } catch {
            return .failure(error)
        }
    }

    /// Revokes tokens at the provider (RFC 7009), every kind in parallel, and drops each revoked
    /// token from the stored credential. A credential with nothing usable left is removed from
    /// the store; a token whose revocation failed stays.
    ///
    /// `.refreshToken` also revokes the access token: the grant ends, and a provider that does
    /// not cascade on its own must not leave the access token alive.
    public func revoke(_ scope: RevocationScope = .all) async -> RevocationResult {
        let current: StoredCredential
        do {
            current = try await stored()
        } catch {
            return RevocationResult(outcomes: [.accessToken: .failed(error)], removedFromStore: false)
        }
        let kinds: [TokenKind]
        switch scope {
        case .all: kinds = [.accessToken, .refreshToken, .deviceSecret]
        case .accessToken: kinds = [.accessToken]
        case .refreshToken: kinds = [.refreshToken, .accessToken]
        case .deviceSecret: kinds = [.deviceSecret]
        }
        let provider = self.provider
        var outcomes: [TokenKind: RevocationOutcome] = [:]
        await withTaskGroup(of: (TokenKind, RevocationOutcome).self) { group in
            for kind in kinds {
                guard let value = current.token.value(of: kind) else {
                    outcomes[kind] = .notPresent
                    continue
                }
                group.addTask {
                    do throws(ProviderError) {
                        try await provider.revoke(value, kind: kind)
                        return (kind, .revoked)
                    } catch {
                        return (kind, .failed(error))
                    }
                }
            }
            for await (kind, outcome) in group { outcomes[kind] = outcome }
        }
        let removed: Bool
        do {
            removed = try await dropRevoked(outcomes)
        } catch {
            // The server side is done; report that the local copy could not be updated.
            for (kind, outcome) in outcomes where outcome.isRevoked { outcomes[kind] = .failed(error) }
            removed = false
        }
        for (kind, outcome) in outcomes {
            var metadata: Logger.Metadata = ["credential": "\(id)", "token": "\(kind)"]
            switch outcome {
            case .revoked: metadata["outcome"] = "revoked"
            case .notPresent: metadata["outcome"] = "not present"
            case .failed(let error): (metadata["outcome"], metadata["error"]) = ("failed", "\(error)")
            }
            store.logger.debug("revocation", metadata: metadata)
        }
        return RevocationResult(outcomes: outcomes, removedFromStore: removed)
    }

    /// Removes revoked tokens from the stored credential; removes the credential when nothing
    /// usable is left. Returns whether it was removed.
    private func dropRevoked(_ outcomes: [TokenKind: RevocationOutcome]) async throws(ProviderError) -> Bool {
        var token = try await stored().token
        for (kind, outcome) in outcomes where outcome.isRevoked { token.discard(kind) }
        do {
            if !token.isUsable(at: now()) {
                try await store.remove(id)
                return true
            }
            try await store.update(id, token: token)
            return false
        } catch {
            throw .storage(error)
        }
    }

    /// Removes the credential from this device only. No server is told: its tokens stay valid
    /// on the server until they expire. Revoke first to end them.
    public func remove() async throws(ProviderError) {
        do {
            try await store.remove(id)
        } catch {
            throw .storage(error)
        }
    }

    /// The user's claims from the userinfo endpoint. When the provider rejects the access
    /// token, it is refreshed once and the request tried again.
    public func userInfo() async throws(ProviderError) -> [String: JSONValue] {
        let accessToken = try await accessToken()
        do {
            return try await provider.userInfo(accessToken: accessToken)
        } catch {
            guard error.rejectedAccessToken else { throw error }
            let refreshed = try await refresh()
            guard let accessToken = refreshed.accessToken else { throw error }
            return try await provider.userInfo(accessToken: accessToken)
        }
    }

    /// What the provider says about one of this credential's tokens (RFC 7662).
    public func introspect(_ kind: TokenKind = .accessToken) async throws(ProviderError) -> Introspection {
        guard let value = try await stored().token.value(of: kind) else {
            throw ProviderError(.unsupported, reason: "The credential has no \(kind).")
        }
        return try await provider.introspect(value, kind: kind)
    }
}
