import Foundation
import Hummingbird
import Latchkey

/// The cookies of a web sign-in: `HttpOnly`, `SameSite=Lax`, and `Secure` unless the app runs on
/// loopback over http (a browser drops a Secure cookie there). A secure session cookie takes the
/// `__Host-` prefix, so that no subdomain can set or shadow it.
struct WebCookies: Sendable {
    let secure: Bool
    let session: String
    let signIn: String

    init(redirectURI: URL) {
        let host = redirectURI.host ?? ""
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) || host.hasPrefix("127.")
        secure = !(redirectURI.scheme == "http" && loopback)
        session = secure ? "__Host-latchkey-session" : "latchkey-session"
        signIn = secure ? "__Host-latchkey-sign-in" : "latchkey-sign-in"
    }

    func cookie(_ name: String, value: String, maxAge: Duration) -> Cookie {
        Cookie(
            name: name, value: value, maxAge: Int(maxAge.components.seconds), path: "/", secure: secure,
            httpOnly: true, sameSite: .lax)
    }

    func removal(_ name: String) -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/", secure: secure, httpOnly: true, sameSite: .lax)
    }
}

/// An `application/x-www-form-urlencoded` body (the logout POSTs), read by Hummingbird's
/// `URLEncodedFormDecoder`. A body it cannot read has no fields: the route says what is missing.
struct FormBody: Decodable {
    static let limit = 64 * 1024

    /// The back-channel logout's `logout_token`.
    var logoutToken: String?
    /// The sign-out form's `csrf_token`.
    var csrfToken: String?

    enum CodingKeys: String, CodingKey {
        case logoutToken = "logout_token"
        case csrfToken = "csrf_token"
    }

    init() {}

    static func of(_ request: Request) async throws -> FormBody {
        let body = try await request.body.collect(upTo: limit)
        return (try? URLEncodedFormDecoder().decode(FormBody.self, from: String(buffer: body))) ?? FormBody()
    }
}
