import Foundation

/// How the client proves who it is to an endpoint (RFC 6749 §2.3; OpenID Connect Core §9).
public enum ClientAuthentication: Sendable, Hashable {
    /// A public client: only `client_id` is sent.
    case none
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret.
    case basic(secret: String)
    /// `client_secret_post`: `client_id` and `client_secret` in the form body.
    case post(secret: String)

    /// Adds this authentication to a request's form and headers.
    func apply(clientID: String, form: inout [(String, String)], headers: inout [(String, String)]) {
        switch self {
        case .none:
            form.append(("client_id", clientID))
        case .post(let secret):
            form.append(("client_id", clientID))
            form.append(("client_secret", secret))
        case .basic(let secret):
            let credentials = "\(FormEncoding.encode(clientID)):\(FormEncoding.encode(secret))"
            headers.append(("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString()))
        }
    }

    /// The secret, when there is one (for redaction).
    var secret: String? {
        switch self {
        case .none: nil
        case .basic(let secret), .post(let secret): secret
        }
    }
}

/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B).
enum FormEncoding {
    private static let unreserved: CharacterSet = {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: "-._*")
        return set
    }()

    static func encode(_ value: String) -> String {
        (value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "").replacingOccurrences(
            of: "%20", with: "+")
    }

    static func encode(_ form: [(String, String)]) -> Data {
        Data(form.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&").utf8)
    }
}
