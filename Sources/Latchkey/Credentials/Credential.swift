import Foundation

/// A stored credential together with the provider it came from: gets a fresh access token,
/// revokes, removes, asks for user info and introspection.
///
/// Get one from ``OpenIDProvider/signIn(_:scopes:into:tags:makeDefault:)`` or
/// ``IdentityProvider/credential(_:in:)``; handles for the same credential are shared, so
/// concurrent ``accessToken(minimumValidity:)`` calls cause one refresh. Every change it makes
/// runs in the credential's transaction (see ``CredentialStore``).
public actor Credential {
    /// The credential's id in its store.
    public nonisolated let id: CredentialID
    /// The store that holds it.
    public nonisolated let store: CredentialStore
    /// The provider its tokens came from.
    public nonisolated let provider: any IdentityProvider
    /// The refresh in flight, shared by every caller of this handle.
    nonisolated let refreshes = SingleFlight<Refreshed, ProviderError>()

    /// Creates a handle. Only the store creates handles (``CredentialStore/credential(_:provider:)``),
    /// so that every caller of one credential shares one refresh.
    init(id: CredentialID, store: CredentialStore, provider: any IdentityProvider) {
        self.id = id
        self.store = store
        self.provider = provider
    }

    /// The current date, by the store's clock.
    nonisolated func now() -> Date { store.clock.date }

    /// The credential as stored now.
    public nonisolated func stored() async throws(ProviderError) -> StoredCredential {
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

    /// Runs `body` in this credential's transaction, its storage failure as a provider error.
    func transaction<Result: Sendable>(
        _ body: @Sendable (CredentialTransaction) async throws(StorageError) -> Result
    ) async throws(ProviderError) -> Result {
        do {
            return try await store.transaction(id, body)
        } catch {
            throw .storage(error)
        }
    }
}
