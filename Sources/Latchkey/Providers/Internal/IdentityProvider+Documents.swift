extension IdentityProvider {
    /// What the provider publishes that Latchkey keeps in the store it is registered with
    /// (metadata, key sets); `nil` for a provider of another kind.
    var publishedDocuments: ProviderDocuments? {
        switch self {
        case let provider as OpenIDProvider: provider.documents
        case let provider as CognitoProvider: provider.documents
        case let provider as PingJourneyProvider: provider.openID.documents
        default: nil
        }
    }
}
