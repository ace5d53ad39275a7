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

/// An `application/x-www-form-urlencoded` body (the logout POSTs).
enum FormBody {
    static let limit = 64 * 1024

    static func fields(of request: Request) async throws -> [String: String] {
        let body = try await request.body.collect(upTo: limit)
        return parse(String(buffer: body))
    }

    static func parse(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            guard let name = parts.first, !name.isEmpty else { continue }
            fields[name] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }
}
