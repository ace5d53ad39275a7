import Latchkey

/// A configured provider's client, by the kind its entry names: what a command that does
/// something only one kind can (a journey's walk, Cognito's password sign-in) switches over,
/// instead of casting an `any IdentityProvider` back to what it was made as.
enum ProviderClient: Sendable {
    case openID(OpenIDProvider)
    case cognito(CognitoProvider)
    case pingJourney(PingJourneyProvider)

    /// The client as the store sees it.
    var identityProvider: any IdentityProvider {
        switch self {
        case .openID(let provider): provider
        case .cognito(let provider): provider
        case .pingJourney(let provider): provider
        }
    }

    /// The journey client, when this is one.
    var pingJourney: PingJourneyProvider? {
        if case .pingJourney(let provider) = self { provider } else { nil }
    }
}
