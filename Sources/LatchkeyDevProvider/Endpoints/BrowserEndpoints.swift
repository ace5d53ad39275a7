import Foundation
import HTTPTypes
import Hummingbird

/// The endpoints a person sees in a browser: sign-in, device code entry, sign-out.
extension Endpoints {
    static let sessionCookie = "latchkey_dev_session"

    // MARK: Authorization endpoint (RFC 6749 §4.1, RFC 7636, RFC 8252)

    /// `GET /authorize` starts a request; `POST /authorize` is the sign-in form coming back.
    func authorize(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let parameters = try await Parameters.of(request)
        // Errors about the client or the redirect URI are shown, never redirected (§4.1.2.1).
        do {
            try await adoptClient(named: try? parameters["client_id"])
        } catch let failure as OAuthFailure {
            return Reply.html(
                "<h1>Unknown client</h1><p>\(Reply.escape(failure.description))</p>", status: .badRequest)
        }
        guard let clientID = try? parameters["client_id"], let client = state.clients.client(clientID) else {
            return Reply.html(
                "<h1>Unknown client</h1><p>client_id is missing or not registered.</p>", status: .badRequest)
        }
        guard let redirectURI = try? parameters["redirect_uri"],
            client.redirectURIs.contains(where: { RedirectMatching.matches(redirectURI, registered: $0) })
        else {
            return Reply.html(
                "<h1>Invalid redirect URI</h1><p>redirect_uri is missing or not registered for this client.</p>",
                status: .badRequest)
        }
        let state = try? parameters["state"]
        // RFC 9207: every authorization response names its issuer, so a client talking to
        // several providers can tell whose answer it is (mix-up attacks).
        let issuer = await issuer(context)
        func fail(_ error: String, _ description: String) -> Response {
            Reply.redirect(
                Reply.url(
                    redirectURI,
                    adding: [("error", error), ("error_description", description), ("state", state), ("iss", issuer)]))
        }
        for name in parameters.repeated {
            return fail("invalid_request", "The parameter \(name) is repeated.")
        }
        guard let responseType = try parameters["response_type"] else {
            return fail("invalid_request", "response_type is missing.")
        }
        guard responseType == "code" else {
            return fail("unsupported_response_type", "Only response_type=code is supported.")
        }
        guard client.grantTypes.contains("authorization_code") else {
            return fail("unauthorized_client", "The client may not use the authorization code grant.")
        }
        let challenge = try parameters["code_challenge"]
        let method = try parameters["code_challenge_method"]
        if challenge != nil || method != nil {
            guard method == "S256" else { return fail("invalid_request", "code_challenge_method must be S256.") }
            guard let challenge, challenge.count == 43 else {
                return fail("invalid_request", "code_challenge must be a base64url SHA-256 digest.")
            }
        } else if client.isPublic {
            return fail("invalid_request", "PKCE (code_challenge with S256) is required for public clients.")
        }
        let scopes: [String]
        do {
            scopes = try validScopes(try parameters["scope"], client: client)
        } catch {
            return fail("invalid_scope", "A requested scope is not allowed for this client.")
        }
        let nonce = try parameters["nonce"]
        let prompt = Set((try parameters["prompt"]).map(Self.scopes) ?? [])
        // OpenID Connect Core §11, as idpyoidc enforces it: offline access only with consent
        // asked for (checked on the request the app sent, not on the sign-in form's post;
        // prompt=none, which nothing may join, is answered as it asks).
        if scopes.contains("offline_access"), !prompt.contains("consent"), !prompt.contains("none"),
            try parameters["username"] == nil
        {
            return fail("invalid_request", "consent in prompt")
        }
        let cookie = request.cookies[Self.sessionCookie]?.value

        func issue(_ session: ProviderState.Session, setCookie: String? = nil) async -> Response {
            let code = await self.state.issueCode(
                issuer: issuer, clientID: client.clientID, redirectURI: redirectURI, session: session, scopes: scopes,
                nonce: nonce,
                codeChallenge: challenge)
            var response = Reply.redirect(
                Reply.url(redirectURI, adding: [("code", code), ("state", state), ("iss", issuer)]))
            if let setCookie {
                response.setCookie(
                    Cookie(name: Self.sessionCookie, value: setCookie, path: "/", httpOnly: true, sameSite: .lax))
            }
            return response
        }

        // A journey session in its header (PingAM's way of authorizing without a browser): a
        // new OAuth session of its own, so that ending either leaves the other's tokens alone.
        if let header = HTTPField.Name(journeys.cookieName), let value = request.headers[header] {
            faults.increment("authorize.session")
            if let journeySession = await journeys.session(value) {
                return await issue(await self.state.startSession(authorizedBy: journeySession))
            }
        }
        if request.method == .post, let username = try parameters["username"] {
            guard
                let user = await self.state.checkPassword(
                    username: username, password: (try parameters["password"]) ?? "")
            else {
                return Reply.html(
                    signInForm(parameters, error: "The username or password is wrong.", context: context),
                    status: .unauthorized)
            }
            let started = await self.state.startBrowserSession(username: user.username)
            guard let session = await self.state.browserSession(cookie: started.cookie) else {
                return fail("server_error", "The session could not be started.")
            }
            return await issue(session, setCookie: started.cookie)
        }
        if prompt.contains("none") {
            guard prompt.count == 1 else { return fail("invalid_request", "prompt=none cannot be combined.") }
            guard let session = await self.state.browserSession(cookie: cookie) else {
                return fail("login_required", "There is no signed-in session.")
            }
            return await issue(session)
        }
        if !prompt.contains("login"), let session = await self.state.browserSession(cookie: cookie) {
            return await issue(session)
        }
        return Reply.html(signInForm(parameters, error: nil, context: context))
    }

    private func signInForm(_ parameters: Parameters, error: String?, context: ProviderContext) -> String {
        let hidden = parameters.values.filter { !["username", "password", "prompt"].contains($0.key) }
            .sorted { $0.key < $1.key }
            .map { #"<input type="hidden" name="\#(Reply.escape($0.key))" value="\#(Reply.escape($0.value))">"# }
            .joined(separator: "\n")
        return """
            <h1>Sign in</h1>
            \(error.map { #"<p class="error">\#(Reply.escape($0))</p>"# } ?? "")
            <form method="post" action="\(context.issuerPath + DevProviderEndpoint.authorization.path)">
            \(hidden)
            <label>Username <input name="username" autocomplete="username"></label>
            <label>Password <input name="password" type="password" autocomplete="current-password"></label>
            <button type="submit">Sign in</button>
            </form>
            """
    }

    // MARK: Device verification page (RFC 8628 §3.3)

    func device(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let parameters = try await Parameters.of(request)
        let userCode = (try parameters["user_code"]) ?? ""
        guard request.method == .post else { return Reply.html(deviceForm(userCode: userCode, error: nil)) }
        guard await state.pendingDeviceRequest(userCode: userCode) else {
            return Reply.html(
                deviceForm(userCode: userCode, error: "That code is not valid or has expired."), status: .badRequest)
        }
        if (try parameters["action"]) == "deny" {
            _ = await state.decideDeviceRequest(userCode: userCode, username: nil, approve: false)
            return Reply.html("<h1>Request denied</h1><p>The device was not signed in.</p>")
        }
        guard let username = try parameters["username"],
            let user = await state.checkPassword(username: username, password: (try parameters["password"]) ?? "")
        else {
            return Reply.html(
                deviceForm(userCode: userCode, error: "The username or password is wrong."), status: .unauthorized)
        }
        _ = await state.decideDeviceRequest(userCode: userCode, username: user.username, approve: true)
        return Reply.html("<h1>Device signed in</h1><p>You can go back to your device.</p>")
    }

    private func deviceForm(userCode: String, error: String?) -> String {
        """
        <h1>Sign in a device</h1>
        \(error.map { #"<p class="error">\#(Reply.escape($0))</p>"# } ?? "")
        <form method="post" action="\(DevProviderEndpoint.deviceVerification.path)">
        <label>Code <input name="user_code" value="\(Reply.escape(userCode))"></label>
        <label>Username <input name="username"></label>
        <label>Password <input name="password" type="password"></label>
        <button type="submit" name="action" value="approve">Sign in</button>
        <button type="submit" name="action" value="deny">Deny</button>
        </form>
        """
    }

    // MARK: RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0)

    /// Ends the session the `id_token_hint` names without asking, or asks the signed-in browser
    /// to confirm when there is no valid hint.
    func endSession(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let parameters = try await Parameters.of(request)
        for name in parameters.repeated {
            return Reply.html(
                "<h1>Invalid request</h1><p>The parameter \(Reply.escape(name)) is repeated.</p>", status: .badRequest)
        }
        let hintText = try parameters["id_token_hint"]
        var clientID = try parameters["client_id"]
        var hint: ClaimSet?
        if let hintText {
            // An expired ID token is still a valid hint (§2); only the signature and issuer count.
            guard let claims = try? await state.keys.verify(hintText, now: await state.currentDate),
                claims["iss"]?.string == (await issuer(context))
            else {
                return Reply.html("<h1>Invalid request</h1><p>id_token_hint is not valid.</p>", status: .badRequest)
            }
            let audience = claims["aud"]?.strings ?? []
            if let clientID, !audience.contains(clientID) {
                return Reply.html(
                    "<h1>Invalid request</h1><p>client_id does not match id_token_hint.</p>", status: .badRequest)
            }
            clientID = clientID ?? audience.first
            hint = claims
        }
        let state = try parameters["state"]
        var redirect: String?
        if let postLogout = try parameters["post_logout_redirect_uri"] {
            guard let clientID, let client = self.state.clients.client(clientID),
                client.postLogoutRedirectURIs.contains(where: { RedirectMatching.matches(postLogout, registered: $0) })
            else {
                return Reply.html(
                    "<h1>Invalid request</h1><p>post_logout_redirect_uri is not registered for this client.</p>",
                    status: .badRequest)
            }
            redirect = Reply.url(postLogout, adding: [("state", state)])
        }
        let cookie = request.cookies[Self.sessionCookie]?.value
        let browserSession = await self.state.browserSession(cookie: cookie)
        let sid: String?
        if let hint {
            sid = hint["sid"]?.string
        } else if request.method == .post, (try parameters["confirm"]) == "yes" {
            sid = browserSession?.sid
        } else {
            let hidden = parameters.values.sorted { $0.key < $1.key }
                .map { #"<input type="hidden" name="\#(Reply.escape($0.key))" value="\#(Reply.escape($0.value))">"# }
                .joined(separator: "\n")
            return Reply.html(
                """
                <h1>Sign out?</h1>
                <form method="post" action="\(context.issuerPath + DevProviderEndpoint.endSession.path)">\(hidden)
                <button type="submit" name="confirm" value="yes">Sign out</button></form>
                """)
        }
        if let sid, let journeySession = await self.state.endSession(sid: sid) {
            // As in AM: the OIDC session's end is its SSO session's end.
            await journeys.end(id: journeySession)
        }
        await sendLogouts()
        var response = redirect.map(Reply.redirect) ?? Reply.html("<h1>Signed out</h1><p>You are signed out.</p>")
        if browserSession == nil || browserSession?.sid == sid {
            response.setCookie(Cookie(name: Self.sessionCookie, value: "", maxAge: 0, path: "/", httpOnly: true))
        }
        return response
    }
}

/// Redirect URI comparison: exact, except that a loopback redirect URI matches on any port
/// (RFC 8252 §7.3).
enum RedirectMatching {
    static func matches(_ candidate: String, registered: String) -> Bool {
        if candidate == registered { return true }
        guard let given = URLComponents(string: candidate), let known = URLComponents(string: registered),
            given.scheme == "http", known.scheme == "http", let host = given.host, isLoopback(host),
            host == known.host
        else { return false }
        return given.path == known.path && given.percentEncodedQuery == known.percentEncodedQuery
            && given.fragment == nil && given.user == nil
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "::1" || host == "[::1]" || host == "localhost"
    }
}
