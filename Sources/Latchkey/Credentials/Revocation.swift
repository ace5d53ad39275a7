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
    /// Not sent on its own: the provider revokes this kind only together with the refresh
    /// token (Amazon Cognito's access tokens), so it ends when that revocation succeeds.
    case endsWithRefreshToken

    /// Whether the token is revoked.
    public var isRevoked: Bool { if case .revoked = self { true } else { false } }

    /// Whether the revocation failed.
    var isFailure: Bool { if case .failed = self { true } else { false } }
}

/// What a revocation did, kind by kind (never only the first error).
///
/// When the provider confirms the refresh token's revocation, a kind it revokes only with the
/// refresh token (``RevocationOutcome/endsWithRefreshToken``) has ended too and leaves the
/// stored credential as well.
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
