import Foundation
public import Hummingbird
public import Latchkey
import Logging

/// The routes of web sign-in and sign-out:
///
/// - `GET /login?return_to=/path`: starts a sign-in (authorization code + PKCE, `state`,
///   `nonce`), the pending sign-in kept in the store under a short-lived cookie, and sends the
///   browser to the provider; 429 when the client's address has too many sign-ins pending.
/// - `GET /callback`: completes it: a new session (a new id at every sign-in, so a planted
///   cookie is never the signed-in one), then back to `return_to`. A redirect whose `state` is
///   not the pending sign-in's is refused and leaves it in place.
/// - `POST /logout` with the form field `csrf_token`: ends the session, revokes its tokens
///   (queued when the provider is down) and sends the browser to the provider's end-session
///   endpoint with `id_token_hint` and the post-logout redirect URI.
/// - `POST /backchannel-logout` with `logout_token` (OpenID Connect Back-Channel Logout):
///   200 when the logout was carried out (an unknown `sid` included), 400 with an error body
///   when the token is refused or replayed, 503 when it cannot be carried out now; never cached.
///
/// ```swift
/// let router = Router(context: LatchkeyWebContext.self)
/// router.add(middleware: WebSessionMiddleware(sessions: sessions))
/// WebSignInRoutes(sessions: sessions).register(on: router)
/// router.group("account").add(middleware: RequireSignIn()).get { _, context in … }
/// ```
public struct WebSignInRoutes<Context: LatchkeyRequestContext>: Sendable {
    /// The sessions the routes sign in and out.
    public let sessions: WebSessions
    /// Called with every sign-out's result (the per-step truth: revoked, queued…).
    public var onSignOut: @Sendable (WebSignOutResult) async -> Void
    /// The address a request comes from, for the bound on pending sign-ins per client: by
    /// default the connection's peer (a context that is a `RemoteAddressRequestContext`, as
    /// ``LatchkeyWebContext`` is). Behind a proxy, read the header the proxy sets instead.
    public var clientAddress: @Sendable (Request, Context) -> String?
    let cookies: WebCookies

    /// Creates the routes.
    public init(sessions: WebSessions, onSignOut: @escaping @Sendable (WebSignOutResult) async -> Void = { _ in }) {
        self.sessions = sessions
        self.onSignOut = onSignOut
        clientAddress = { _, context in
            guard let address = (context as? any RemoteAddressRequestContext)?.remoteAddress else { return nil }
            return address.ipAddress ?? "\(address)"
        }
        cookies = WebCookies(redirectURI: sessions.redirectURI)
    }

    /// Adds the four routes to `router`; the callback at the path of the redirect URI.
    public func register(on router: some RouterMethods<Context>) {
        router.get("login") { request, context in try await login(request, client: clientAddress(request, context)) }
        router.get(RouterPath(sessions.redirectURI.path)) { request, _ in try await callback(request) }
        router.post("logout") { request, context in try await logout(request, context) }
        router.post("backchannel-logout") { request, _ in try await backChannelLogout(request) }
    }

    func login(_ request: Request, client: String?) async throws -> Response {
        let pending: PendingWebSignIn
        do {
            pending = try await sessions.beginSignIn(
                returnTo: request.uri.queryParameters["return_to"].map(String.init), client: client)
        } catch  where error.code == .tooManySignIns {
            var response = Self.page("Too many sign-ins", error.reason, status: .tooManyRequests)
            response.headers[.retryAfter] = "\(Int(sessions.policy.pendingSignInLifetime.timeInterval))"
            return response
        } catch {
            return Self.page(
                "Sign-in is unavailable", "\(error.reason) Try again shortly.", status: .serviceUnavailable)
        }
        var response = Response.redirect(to: pending.authorizationURL.absoluteString, type: .normal)
        response.setCookie(
            cookies.cookie(cookies.signIn, value: pending.cookie, maxAge: sessions.policy.pendingSignInLifetime))
        return response
    }

    func callback(_ request: Request) async throws -> Response {
        var components = URLComponents(url: sessions.redirectURI, resolvingAgainstBaseURL: false)
        components?.percentEncodedQuery = request.uri.query
        guard let callbackURL = components?.url else {
            return Self.page("Sign-in failed", "The redirect could not be read.", status: .badRequest)
        }
        let completed: CompletedWebSignIn
        do {
            completed = try await sessions.completeSignIn(
                pendingCookie: request.cookies[cookies.signIn]?.value, callbackURL: callbackURL)
        } catch {
            var response = Self.page(
                "Sign-in failed", error.reason, status: error.code == .storage ? .serviceUnavailable : .badRequest)
            // A redirect that is not this browser's own leaves its sign-in (and cookie) alone.
            if error.code != .stateMismatch { response.setCookie(cookies.removal(cookies.signIn)) }
            return response
        }
        // A session this browser had before is ended: one browser, one session.
        if let old = request.cookies[cookies.session]?.value, !old.isEmpty {
            _ = try? await sessions.signOut(cookie: old)
        }
        var response = Response.redirect(to: completed.returnTo, type: .normal)
        response.setCookie(cookies.removal(cookies.signIn))
        response.setCookie(
            cookies.cookie(cookies.session, value: completed.cookie, maxAge: sessions.policy.absoluteLifetime))
        return response
    }

    func logout(_ request: Request, _ context: Context) async throws -> Response {
        // A form of another site cannot send the session cookie (SameSite=Lax) nor know the
        // CSRF token; a browser's Origin, when sent, must be this app's.
        if let origin = request.headers[.origin], origin != Self.origin(of: sessions.redirectURI) {
            return Self.page("Sign-out refused", "The request came from another site.", status: .forbidden)
        }
        let form = try await FormBody.of(request)
        guard let cookie = request.cookies[cookies.session]?.value, !cookie.isEmpty else {
            return Response.redirect(to: sessions.postLogoutRedirectURI?.absoluteString ?? "/", type: .normal)
        }
        guard sessions.isValidCSRFToken(form.csrfToken, cookie: cookie) else {
            return Self.page(
                "Sign-out refused", "The form is stale; reload the page and try again.", status: .forbidden)
        }
        let result: WebSignOutResult
        do {
            result = try await sessions.signOut(cookie: cookie)
        } catch {
            context.logger.error("sign-out failed", metadata: ["error": "\(error)"])
            return Self.page(
                "Sign-out failed", "Sessions cannot be changed right now; nothing changed.", status: .serviceUnavailable
            )
        }
        await onSignOut(result)
        let next = result.endSessionURL ?? sessions.postLogoutRedirectURI
        var response = Response.redirect(to: next?.absoluteString ?? "/", type: .normal)
        response.setCookie(cookies.removal(cookies.session))
        return response
    }

    func backChannelLogout(_ request: Request) async throws -> Response {
        guard let token = try await FormBody.of(request).logoutToken, !token.isEmpty else {
            return Self.logoutAnswer(.badRequest, "invalid_request", "The logout_token parameter is missing.")
        }
        do {
            _ = try await sessions.backChannelLogout(token)
            return Self.logoutAnswer(.ok, nil, nil)
        } catch {
            switch error.code {
            case .unavailable:
                var response = Self.logoutAnswer(.serviceUnavailable, "temporarily_unavailable", error.description)
                response.headers[.retryAfter] = "5"
                return response
            default:
                return Self.logoutAnswer(.badRequest, error.oauthError, error.description)
            }
        }
    }

    /// A back-channel logout answer: never cached (§2.8), a JSON error body when refused.
    static func logoutAnswer(_ status: HTTPResponse.Status, _ error: String?, _ description: String?) -> Response {
        var headers: HTTPFields = [.cacheControl: "no-store"]
        guard let error else { return Response(status: status, headers: headers) }
        headers[.contentType] = "application/json"
        let body = try? JSONSerialization.data(
            withJSONObject: ["error": error, "error_description": description ?? ""], options: [.sortedKeys])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body ?? Data())))
    }

    static func page(_ title: String, _ text: String, status: HTTPResponse.Status) -> Response {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let html = "<!doctype html><title>\(escape(title))</title><h1>\(escape(title))</h1><p>\(escape(text))</p>"
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func origin(of url: URL) -> String {
        var origin = "\(url.scheme ?? "https")://\(url.host ?? "")"
        if let port = url.port { origin += ":\(port)" }
        return origin
    }
}
