import Crypto
import Foundation

/// The secret a cookie carries and the handle the store keeps for it.
enum SessionSecret {
    /// A new secret: 32 random bytes, base64url.
    static func make() -> String {
        Base64URL.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// The SHA-256 of `secret`, in lowercase hex: what the store keeps.
    static func handle(of secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The CSRF token of the session whose cookie holds `secret`: an HMAC of a fixed label under
    /// a key derived from the secret. A page of another site cannot read the cookie, so it
    /// cannot compute the token; nothing needs storing.
    static func csrfToken(for secret: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: csrfLabel, using: csrfKey(secret))))
    }

    /// Whether `token` is the CSRF token for `secret`, compared in constant time.
    static func isCSRFToken(_ token: String, for secret: String) -> Bool {
        guard let code = Base64URL.decode(token) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: csrfLabel, using: csrfKey(secret))
    }

    private static let csrfLabel = Data("latchkey.csrf".utf8)

    private static func csrfKey(_ secret: String) -> SymmetricKey {
        SymmetricKey(data: SHA256.hash(data: Data(("latchkey.csrf:" + secret).utf8)))
    }
}

/// What completing a sign-in needs, kept in the store from the redirect to the callback.
struct PendingSignIn: Codable {
    var state: String
    var nonce: String
    var codeVerifier: String
    var redirectURI: URL
    var authorizationURL: URL
    /// Where to send the browser once signed in: a path of the app, never another site.
    var returnTo: String

    init(_ request: AuthorizationRequest, returnTo: String) {
        state = request.state
        nonce = request.nonce
        codeVerifier = request.codeVerifier
        redirectURI = request.redirectURI
        authorizationURL = request.url
        self.returnTo = returnTo
    }

    var request: AuthorizationRequest {
        AuthorizationRequest(
            url: authorizationURL, redirectURI: redirectURI, state: state, nonce: nonce, codeVerifier: codeVerifier)
    }
}
