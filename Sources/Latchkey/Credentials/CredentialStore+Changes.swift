import Logging

extension CredentialStore {
    /// The prefix of the tag keys Latchkey keeps for itself; ``setTags(_:for:)`` and
    /// ``add(_:accountClaims:tags:makeDefault:)`` refuse them.
    public static let reservedTagPrefix = "latchkey."

    /// Stores a new credential for `token`, with metadata read from its ID token.
    ///
    /// - Parameters:
    ///   - token: the tokens of a sign-in.
    ///   - accountClaims: the account's claims when the token has no ID token (from userinfo,
    ///     say); the ID token's claims win when it has one.
    ///   - tags: labels of the application's choosing; keys may not start with `latchkey.`.
    ///   - makeDefault: make the new credential the default. When the store has no default,
    ///     it becomes the default anyway.
    /// - Returns: the stored credential, with its new identifier.
    @discardableResult
    public func add(
        _ token: Token,
        accountClaims: [String: JSONValue]? = nil,
        tags: [String: String] = [:],
        makeDefault: Bool = false
    ) async throws(StorageError) -> StoredCredential {
        try Self.checkTags(tags)
        let credential = try await insert(token, accountClaims: accountClaims, tags: tags)
        try await self.makeDefault(credential.id, always: makeDefault)
        return credential
    }

    /// Inserts a new credential for `token`; the default is left as it is.
    func insert(_ token: Token, accountClaims: [String: JSONValue]?, tags: [String: String])
        async throws(StorageError) -> StoredCredential
    {
        let date = clock.date
        var metadata = CredentialMetadata(token: token, tags: tags)
        if token.idToken == nil, let accountClaims { metadata.read(accountClaims) }
        let credential = StoredCredential(
            id: CredentialID(), token: token, metadata: metadata, createdAt: date, updatedAt: date, version: 1)
        try await storage.insert(credential)
        logger.debug("credential added", metadata: ["credential": "\(credential.id)"])
        events.send(.added(credential.id))
        return credential
    }

    /// Makes `id` the default when `always`, or when the store has no default.
    func makeDefault(_ id: CredentialID, always: Bool) async throws(StorageError) {
        if always {
            try await assignDefault(id)
        } else if try await storage.defaultCredentialID() == nil {
            try await assignDefault(id)
        }
    }

    /// Changes a stored credential with `change` in its credential transaction: under its lease,
    /// read once, written by compare-and-swap (when another writer got in first, `change` runs
    /// again on the newer credential). Nothing is ever written back from a stale read.
    ///
    /// `change` may throw to give up; nothing is written then. A change that changes nothing
    /// writes nothing and publishes no event.
    /// - Returns: the credential as stored afterwards.
    @discardableResult
    package func update(
        _ id: CredentialID, _ change: @Sendable (inout StoredCredential) throws(StorageError) -> Void
    ) async throws(StorageError) -> StoredCredential {
        try await transaction(id) { transaction async throws(StorageError) in
            try await transaction.update(change)
        }
    }

    /// Replaces the tokens of a stored credential, in its transaction. Account metadata is read
    /// again from the new ID token; when the new token has none, the metadata read earlier is
    /// kept. Tags and state are kept.
    @discardableResult
    package func update(_ id: CredentialID, token: Token) async throws(StorageError) -> StoredCredential {
        try await update(id) { credential in credential.replaceToken(with: token) }
    }

    /// Replaces the application tags of a stored credential.
    ///
    /// - Throws: ``StorageError/Code/reservedTag`` when a key starts with `latchkey.`: those
    ///   are Latchkey's own (its state has fields of its own, ``StoredCredential/state``).
    @discardableResult
    public func setTags(_ tags: [String: String], for id: CredentialID) async throws(StorageError) -> StoredCredential {
        try Self.checkTags(tags)
        return try await update(id) { credential in
            // Tags of Latchkey's own that an earlier version wrote stay.
            let kept = credential.metadata.tags.filter { $0.key.hasPrefix(Self.reservedTagPrefix) }
            credential.metadata.tags = tags.merging(kept) { new, _ in new }
        }
    }

    static func checkTags(_ tags: [String: String]) throws(StorageError) {
        guard let reserved = tags.keys.first(where: { $0.hasPrefix(reservedTagPrefix) }) else { return }
        throw StorageError(
            .reservedTag,
            reason:
                "The tag \(reserved) starts with \(reservedTagPrefix), which Latchkey keeps for itself; nothing was changed."
        )
    }

    /// Removes a credential from this store (local only: no server is told, and its tokens stay
    /// valid on the server until they expire or are revoked). It waits for a change under way
    /// (a refresh, say) to finish first.
    ///
    /// When it was the default, the default becomes `nil`.
    /// - Returns: whether a credential was removed.
    @discardableResult
    public func remove(_ id: CredentialID) async throws(StorageError) -> Bool {
        try await transaction(id) { transaction async throws(StorageError) in
            try await transaction.remove()
        }
    }

    /// Makes `id` the default credential, or clears the default with `nil`.
    ///
    /// Never removes a credential. Throws ``StorageError/Code/credentialNotFound`` when `id`
    /// names no stored credential.
    ///
    /// Setting it also replaces a damaged default marker (see ``damagedRecords()``).
    public func setDefault(_ id: CredentialID?) async throws(StorageError) {
        do {
            guard try await storage.defaultCredentialID() != id else { return }
        } catch  where error.code == .corruptRecord {
            logger.debug("replacing a damaged default marker")
        }
        try await assignDefault(id)
    }

    func assignDefault(_ id: CredentialID?) async throws(StorageError) {
        try await storage.setDefaultCredentialID(id)
        events.send(.defaultChanged(id))
    }
}

extension StoredCredential {
    /// Replaces the tokens; account metadata is read again from the new ID token, or kept when
    /// the new token has none. Tags are kept.
    package mutating func replaceToken(with token: Token) {
        if token.idToken != nil {
            let tags = metadata.tags
            var fresh = CredentialMetadata(token: token, tags: tags)
            // Claims the new ID token leaves out (a refresh's ID token is often thinner) keep
            // the values read before.
            fresh.preferredUsername = fresh.preferredUsername ?? metadata.preferredUsername
            fresh.email = fresh.email ?? metadata.email
            fresh.name = fresh.name ?? metadata.name
            metadata = fresh
        } else {
            metadata.issuer = token.provider.issuer
            metadata.clientID = token.provider.clientID
        }
        self.token = token
    }
}
