import Foundation
public import Hummingbird
public import Latchkey
import Logging

/// Puts the signed-in user on every request's context: the session its cookie names is read
/// from the store (so a session ended on another instance is signed out here at once), and
/// its credential and CSRF token are set on the context.
///
/// A store that cannot be read is a 503, never "signed out".
public struct WebSessionMiddleware<Context: LatchkeyRequestContext>: RouterMiddleware {
    let sessions: WebSessions
    let cookies: WebCookies

    /// Creates the middleware for `sessions`.
    public init(sessions: WebSessions) {
        self.sessions = sessions
        cookies = WebCookies(redirectURI: sessions.redirectURI)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let cookie = request.cookies[cookies.session]?.value, !cookie.isEmpty else {
            return try await next(request, context)
        }
        var context = context
        do {
            if let session = try await sessions.session(cookie: cookie) {
                context.webSession = session
                context.credential = await sessions.credential(for: session)
                context.csrfToken = sessions.csrfToken(cookie: cookie)
            }
        } catch {
            context.logger.error("the session store cannot be read", metadata: ["error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "Sessions cannot be read right now; try again shortly.")
        }
        var response = try await next(request, context)
        if context.webSession == nil { response.setCookie(cookies.removal(cookies.session)) }
        return response
    }
}

/// Lets only signed-in requests through: a `GET` is sent to the sign-in route (and comes back
/// after), anything else gets 401.
public struct RequireSignIn<Context: LatchkeyRequestContext>: RouterMiddleware {
    let loginPath: String

    /// Creates the guard; `loginPath` is where ``WebSignInRoutes`` serves `/login`.
    public init(loginPath: String = "/login") {
        self.loginPath = loginPath
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard context.webSession == nil else { return try await next(request, context) }
        guard request.method == .get else { throw HTTPError(.unauthorized, message: "Sign in first.") }
        var components = URLComponents()
        components.path = loginPath
        components.queryItems = [URLQueryItem(name: "return_to", value: request.uri.string)]
        return Response.redirect(to: components.string ?? loginPath, type: .found)
    }
}
