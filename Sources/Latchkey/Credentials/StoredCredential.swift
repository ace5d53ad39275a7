public import Foundation

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

    /// Creates a stored credential from its parts.
    public init(
        id: CredentialID, token: Token, metadata: CredentialMetadata, createdAt: Date, updatedAt: Date,
        version: Int = 1
    ) {
        self.id = id
        self.token = token
        self.metadata = metadata
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }

    public var description: String {
        "StoredCredential(id: \(id), account: \(metadata.displayName ?? "unknown"), \(token))"
    }
}
