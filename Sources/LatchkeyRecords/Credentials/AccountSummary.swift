#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What a listing of accounts shows, read without opening any sealed token: the account's
/// metadata, and what is known about its tokens without their values.
public struct AccountSummary: Sendable, Hashable, Identifiable {
    /// The credential's identifier.
    public let id: CredentialID
    /// The account metadata and the application's tags.
    public var metadata: CredentialMetadata
    /// When the access token expires, when there is one and the provider said.
    public var accessTokenExpiresAt: Date?
    /// Whether the credential holds an access token.
    public var hasAccessToken: Bool
    /// Whether the credential holds a refresh token.
    public var hasRefreshToken: Bool
    /// When the credential was first stored.
    public var createdAt: Date
    /// Whether the account's refresh token was rejected: it must sign in again.
    public var needsSignIn: Bool

    /// Creates a summary.
    public init(
        id: CredentialID, metadata: CredentialMetadata, accessTokenExpiresAt: Date?, hasAccessToken: Bool,
        hasRefreshToken: Bool, createdAt: Date, needsSignIn: Bool = false
    ) {
        self.id = id
        self.metadata = metadata
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.hasAccessToken = hasAccessToken
        self.hasRefreshToken = hasRefreshToken
        self.createdAt = createdAt
        self.needsSignIn = needsSignIn
    }

    /// The summary of a stored credential.
    public init(_ credential: StoredCredential) {
        self.init(
            id: credential.id, metadata: credential.metadata,
            accessTokenExpiresAt: credential.token.accessToken == nil ? nil : credential.token.expiresAt,
            hasAccessToken: credential.token.accessToken != nil, hasRefreshToken: credential.token.refreshToken != nil,
            createdAt: credential.createdAt, needsSignIn: credential.state.needsSignIn)
    }
}
