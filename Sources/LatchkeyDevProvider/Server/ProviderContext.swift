import Hummingbird
import NIOCore

/// The request context of the provider: Hummingbird's basics plus the connection, so that a
/// fault can drop it and the admin endpoint can check that its caller is on loopback.
struct ProviderContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    /// The path of the issuer the request is for, below the provider's base URL: empty for the
    /// root issuer, the realm's (`/oauth2/realms/root/realms/alpha`) for the Ping realm.
    var issuerPath = ""

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Whether the peer is on the loopback interface.
    var isLoopbackPeer: Bool {
        guard let address = channel.remoteAddress else { return false }
        switch address {
        case .v4(let v4): return address.ipAddress?.hasPrefix("127.") == true || v4.host == "localhost"
        case .v6: return address.ipAddress == "::1" || address.ipAddress?.hasPrefix("::ffff:127.") == true
        case .unixDomainSocket: return true
        }
    }
}

/// Marks the requests of the Ping realm's OAuth endpoints as the realm issuer's.
struct RealmIssuerMiddleware: RouterMiddleware {
    typealias Context = ProviderContext
    let path: String

    func handle(
        _ request: Request, context: ProviderContext, next: (Request, ProviderContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.issuerPath = path
        return try await next(request, context)
    }
}
