extension CredentialStore {
    /// The credential with this identifier, or `nil`.
    public nonisolated func credential(for id: CredentialID) async throws(StorageError) -> StoredCredential? {
        try await storage.credential(for: id)
    }

    /// Every stored credential that can be read, oldest first (see ``damagedRecords()``).
    public func all() async throws(StorageError) -> [StoredCredential] {
        try await storage.all()
    }

    /// The records that cannot be read, by id: left as they are, and out of every listing, so
    /// that every other account keeps working. ``remove(_:)`` (a credential) or
    /// ``dropOutboxEntry(_:)`` removes one on purpose.
    public func damagedRecords() async throws(StorageError) -> [DamagedRecord] {
        try await storage.damagedRecords() + outbox.damagedOutboxEntries()
    }

    /// The credentials matching an indexed query (subject, username, email, issuer).
    public func find(_ query: CredentialQuery) async throws(StorageError) -> [StoredCredential] {
        try await storage.credentials(matching: query)
    }

    /// The credentials whose metadata satisfies `predicate`, oldest first. The summaries are
    /// read without opening a token, then the matches in one read.
    public func find(
        where predicate: @Sendable (CredentialMetadata) -> Bool
    ) async throws(StorageError) -> [StoredCredential] {
        let matches = try await storage.accounts().filter { predicate($0.metadata) }.map(\.id)
        guard !matches.isEmpty else { return [] }
        return try await storage.credentials(ids: matches)
    }

    /// A summary of every account, oldest first, read without opening any token: what a listing
    /// shows (see ``AccountSummary``).
    public func accounts() async throws(StorageError) -> [AccountSummary] {
        try await storage.accounts()
    }

    /// The default credential (the active account), or `nil` when none is set.
    ///
    /// A damaged default marker is an error (``StorageError/Code/corruptRecord``), never `nil`.
    public var `default`: StoredCredential? {
        get async throws(StorageError) {
            guard let id = try await storage.defaultCredentialID() else { return nil }
            return try await storage.credential(for: id)
        }
    }

    /// The identifier of the default credential, read without opening any token; `nil` when none
    /// is set. A damaged default marker is an error (``StorageError/Code/corruptRecord``).
    public func defaultCredentialID() async throws(StorageError) -> CredentialID? {
        try await storage.defaultCredentialID()
    }
}
