import Foundation
import Hummingbird
import Latchkey
import LatchkeyHummingbird

/// The example's pages.
enum Page {
    static func home(_ context: LatchkeyWebContext) -> Response {
        guard let session = context.webSession else {
            return html("<h1>Latchkey web example</h1><p>Signed out.</p><p><a href=\"/login\">Sign in</a></p>")
        }
        return html(
            """
            <h1>Latchkey web example</h1>
            <p id="who">Signed in as \(escape(session.subject ?? "someone"))</p>
            <p><a href="/protected">A protected page</a></p>
            \(signOutForm(context))
            """)
    }

    /// Calls the provider's userinfo API with the user's access token (refreshed when needed,
    /// once for the fleet).
    static func protected(_ context: LatchkeyWebContext, provider: OpenIDProvider) async throws -> Response {
        guard let credential = context.credential else { throw HTTPError(.unauthorized) }
        let claims: [String: JSONValue]
        do {
            claims = try await credential.userInfo()
        } catch {
            return html("<h1>Protected</h1><p>The API call failed: \(escape("\(error)"))</p>", status: .badGateway)
        }
        let name = claims["preferred_username"]?.stringValue ?? claims["sub"]?.stringValue ?? "?"
        return html(
            """
            <h1>Protected</h1>
            <p id="api">The API says you are \(escape(name))</p>
            \(signOutForm(context))
            """)
    }

    static func signOutForm(_ context: LatchkeyWebContext) -> String {
        """
        <form method="post" action="/logout">
        <input type="hidden" name="csrf_token" value="\(escape(context.csrfToken ?? ""))">
        <button id="sign-out" type="submit">Sign out</button>
        </form>
        """
    }

    static func html(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: "<!doctype html><title>Latchkey web example</title>" + body)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
