public import Hummingbird
public import Latchkey
public import NIOCore

/// A request context that carries the signed-in user: ``WebSessionMiddleware`` fills it in.
///
/// Add the two properties to your own context, or use ``LatchkeyWebContext``.
public protocol LatchkeyRequestContext: RequestContext {
    /// The request's sign-in session, or `nil` when signed out.
    var webSession: WebSession? { get set }
    /// The signed-in user's credential: `try await context.credential?.accessToken()` gives a
    /// valid access token, refreshed once for the whole fleet when it runs out.
    var credential: Credential? { get set }
    /// The CSRF token forms of this session send back (the sign-out form, say).
    var csrfToken: String? { get set }
}

/// A ready-made ``LatchkeyRequestContext``, which knows the client's address (for the bound on
/// pending sign-ins per client).
public struct LatchkeyWebContext: LatchkeyRequestContext, RemoteAddressRequestContext {
    /// Hummingbird's own context.
    public var coreContext: CoreRequestContextStorage
    /// The address of the connection's peer (a proxy's, behind one: see
    /// ``WebSignInRoutes/clientAddress``).
    public let remoteAddress: SocketAddress?
    /// The request's sign-in session, or `nil` when signed out.
    public var webSession: WebSession?
    /// The signed-in user's credential.
    public var credential: Credential?
    /// The CSRF token of the session's forms.
    public var csrfToken: String?

    /// Creates a context for a request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
