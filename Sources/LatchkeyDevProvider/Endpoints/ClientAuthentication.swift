import Foundation
import HTTPTypes
import Hummingbird

/// How a client proved who it is at the token, revocation, introspection or device
/// authorization endpoint (RFC 6749 §2.3).
enum ClientAuthentication {
    /// Authenticates the client of a request: `client_secret_basic`, `client_secret_post`, or
    /// for a public client `none` (only its `client_id`). Using two methods at once is refused.
    ///
    /// - Parameter allowPublic: whether a public client may call this endpoint.
    static func authenticate(
        _ request: Request, _ form: Parameters, clients: ClientDirectory, allowPublic: Bool = true
    ) throws -> DevProviderConfiguration.Client {
        let formID = try form["client_id"]
        let formSecret = try form["client_secret"]
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("basic ") {
            guard formSecret == nil else {
                throw OAuthFailure.invalidRequest("Use one client authentication method, not two.")
            }
            guard let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
                let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
            else { throw OAuthFailure.invalidClient("The Basic credentials are malformed.") }
            // RFC 6749 §2.3.1: both parts are form-urlencoded before Base64.
            let id = Self.formDecode(String(text[..<colon]))
            let secret = Self.formDecode(String(text[text.index(after: colon)...]))
            if let formID, formID != id {
                throw OAuthFailure.invalidRequest("client_id differs from the Basic credentials.")
            }
            guard let client = clients.client(id), let expected = client.clientSecret, expected == secret else {
                throw OAuthFailure.invalidClient("Client authentication failed.")
            }
            return client
        }
        guard let formID else { throw OAuthFailure.invalidClient("The client did not identify itself.") }
        guard let client = clients.client(formID) else { throw OAuthFailure.invalidClient("Unknown client.") }
        if let expected = client.clientSecret {
            guard let formSecret, formSecret == expected else {
                throw OAuthFailure.invalidClient("Client authentication failed.")
            }
            return client
        }
        guard formSecret == nil else { throw OAuthFailure.invalidClient("A public client has no secret.") }
        guard allowPublic else { throw OAuthFailure.invalidClient("This endpoint is for authenticated clients.") }
        return client
    }

    static func formDecode(_ text: String) -> String {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text
    }
}
