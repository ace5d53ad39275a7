#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One account's credential as the store keeps it: its identifier, its tokens and its metadata.
///
/// Its `description` never shows a token value.
public struct StoredCredential: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The credential's identifier in its store.
    public let id: CredentialID
    /// The tokens.
    public var token: Token
    /// The account metadata and the application's tags.
    public var metadata: CredentialMetadata
    /// What Latchkey itself keeps about the credential: whether it must sign in again, and the
    /// access token a resource server rejected. Only Latchkey changes it.
    public package(set) var state: CredentialState
    /// When the credential was first stored.
    public var createdAt: Date
    /// When the credential was last changed.
    public var updatedAt: Date
    /// The record's version in its store: 1 when it is inserted, one more after every update.
    ///
    /// An update names the version it read, and storage refuses it with
    /// ``StorageError/Code/versionConflict`` when the stored record has moved on (compare and
    /// swap), so nothing is ever written back from a stale read.
    public var version: Int

    /// Creates a stored credential from its parts (a storage backend reading its record, say).
    public init(
        id: CredentialID, token: Token, metadata: CredentialMetadata, state: CredentialState = CredentialState(),
        createdAt: Date, updatedAt: Date, version: Int = 1
    ) {
        self.id = id
        self.token = token
        self.metadata = metadata
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }

    public var description: String {
        "StoredCredential(id: \(id), account: \(metadata.displayName ?? "unknown"), \(token))"
    }
}

/// What Latchkey keeps about a credential beside its tokens and the application's tags, in
/// fields (and storage columns) of its own: the application's tags can never overwrite it.
public struct CredentialState: Sendable, Hashable, Codable {
    /// The provider rejected the refresh token: the account must sign in again. Cleared by the
    /// next refresh that succeeds.
    public var needsSignIn: Bool
    /// A fingerprint of the access token a resource server rejected (half of its SHA-256 in
    /// hex; the token cannot be found from it): the next ``Credential/accessToken(minimumValidity:)``
    /// refreshes. Cleared by the refresh.
    public var rejectedAccessToken: String?

    /// Creates a state; the default is a credential nothing is known against.
    public init(needsSignIn: Bool = false, rejectedAccessToken: String? = nil) {
        self.needsSignIn = needsSignIn
        self.rejectedAccessToken = rejectedAccessToken
    }

    /// Whether nothing is known against the credential.
    public var isClear: Bool { !needsSignIn && rejectedAccessToken == nil }
}
