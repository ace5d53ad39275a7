import Crypto
public import Foundation
import HTTPTypes

/// How a user signs in.
public enum SignInMethod: Sendable {
    /// The resource owner password grant (RFC 6749 §4.3): for scripts and tests only, and only
    /// when ``OpenIDProviderConfiguration/allowsPasswordGrant`` is on (RFC 9700 §2.4 says it must
    /// not be used).
    case password(username: String, password: String)
    /// Authorization code with PKCE through the system browser and a loopback redirect
    /// (RFC 8252). `open` is handed the URL to show the user; the sign-in fails with
    /// ``ProviderError/Code/timedOut`` when the browser has not come back in `timeout`.
    case browser(
        listener: any LoopbackRedirectListener, timeout: Duration = .seconds(300),
        open: @Sendable (URL) async -> Void)
    /// The device authorization grant (RFC 8628): `prompt` is handed the code to show the user.
    case deviceCode(prompt: @Sendable (DeviceAuthorization) async -> Void)
}

/// Listens on the loopback interface for the browser's redirect (RFC 8252 §7.3).
public protocol LoopbackRedirectListener: Sendable {
    /// Starts listening; the session knows the redirect URI to send.
    func start() async throws(ProviderError) -> any LoopbackRedirectSession
}

/// One listening loopback redirect endpoint.
public protocol LoopbackRedirectSession: Sendable {
    /// The redirect URI, e.g. `http://127.0.0.1:53412/callback`.
    var redirectURI: URL { get }
    /// The URL the browser was redirected to, once a redirect carrying `state` comes;
    /// ``ProviderError/Code/timedOut`` after `timeout`. Requests without that `state` (from
    /// another local program, or a web page) are answered with an error page and ignored: they
    /// never end the sign-in.
    func callback(state: String, timeout: Duration) async throws(ProviderError) -> URL
    /// Stops listening.
    func close() async
}

/// An authorization request in progress: the URL to open, and what checks the answer.
public struct AuthorizationRequest: Sendable {
    /// The URL to open in the browser.
    public let url: URL
    /// The redirect URI sent (the exchange must send the same one).
    public let redirectURI: URL
    /// The `state` sent; the redirect must carry it back.
    public let state: String
    /// The `nonce` sent; the ID token must carry it.
    public let nonce: String
    let codeVerifier: String
    /// The resources asked for (RFC 8707): the code exchange names them again.
    var resources: [URL] = []
}

/// A device authorization in progress (RFC 8628 §3.2): what to show the user.
public struct DeviceAuthorization: Sendable {
    /// The code the user types.
    public let userCode: String
    /// Where the user types it.
    public let verificationURI: URL
    /// A URL with the code already in it, when the provider gives one.
    public let verificationURIComplete: URL?
    /// When the code expires.
    public let expiresAt: Date
    /// Seconds between polls, as the provider asked.
    public let interval: Int
    let deviceCode: String
    /// The resources asked for (RFC 8707), kept with the grant's tokens.
    var resources: [URL] = []
}
