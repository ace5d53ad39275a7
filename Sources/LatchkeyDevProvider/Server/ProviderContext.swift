import Hummingbird
import NIOCore

/// The request context of the provider: Hummingbird's basics plus the connection, so that a
/// fault can drop it and the admin endpoint can check that its caller is on loopback.
struct ProviderContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

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
