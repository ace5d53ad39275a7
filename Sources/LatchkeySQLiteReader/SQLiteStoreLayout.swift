package import LatchkeyRecords

/// What a SQLite store's tables look like, for every reader of them: the schema version this
/// Latchkey writes and reads, and the columns of a credential row. `LatchkeySQLite` migrates a
/// store to this version; ``SQLiteStoreReader`` reads a store of this version and no other.
package enum SQLiteStoreLayout {
    /// `PRAGMA user_version` of a store this Latchkey wrote (its migrations' count).
    package static let schemaVersion = 13
}

extension SealedCredential {
    /// Every column of a `credential` row.
    package static let columns = [
        "id", "subject", "username", "email", "issuer", "name", "client_id", "tags", "metadata", "sealed_token",
        "created_at", "updated_at", "version", "access_token_expires_at", "has_access_token", "has_refresh_token",
        "needs_sign_in", "rejected_access_token",
    ]

    /// A `SELECT` of every column of `credential` (named as in ``columns``) and, as
    /// `recorded_version`, `recorded_deleted` and `recorded_seal`, the row's
    /// ``CredentialVersionRecord`` (`NULL` when there is none). A `WHERE` after it names its
    /// columns as `credential.id`.
    package static let selectRecorded =
        "SELECT \(columns.map { "credential.\($0) AS \($0)" }.joined(separator: ", ")), "
        + "credential_version.version AS recorded_version, credential_version.deleted AS recorded_deleted, "
        + "credential_version.seal AS recorded_seal "
        + "FROM credential LEFT JOIN credential_version ON credential_version.id = credential.id"

    /// What a listing reads: the columns in the clear, neither the sealed tokens nor the sealed
    /// metadata.
    package static let listedColumns = [
        "id", "subject", "username", "email", "issuer", "name", "client_id", "tags", "created_at",
        "access_token_expires_at", "has_access_token", "has_refresh_token", "needs_sign_in",
    ]
}
