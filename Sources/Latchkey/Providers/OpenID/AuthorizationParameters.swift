public import Foundation

/// What an authorization request asks of the provider besides the client and the PKCE pair:
/// the scopes, `prompt`, `max_age`, `acr_values`, `login_hint` (OpenID Connect Core §3.1.2.1) and
/// the resources (RFC 8707). Whatever is `nil` is the configuration's (scopes, resources) or left out.
///
/// OpenID Connect Core §11: a request for `offline_access` must carry `prompt=consent` (a
/// server may ignore `offline_access` otherwise, and some refuse the request), so
/// ``prompt(forScopes:)`` adds `consent` whenever the scopes ask for it.
public struct AuthorizationParameters: Sendable, Hashable {
    /// The scopes to ask for; the provider configuration's when `nil`.
    public var scopes: [String]?
    /// `prompt`'s values (`login`, `consent`, `select_account`, `none`).
    public var prompt: [String]
    /// `max_age`: the longest time since the user last authenticated, in seconds, after which
    /// the provider asks again.
    public var maxAge: Int?
    /// `acr_values`: the authentication context classes asked for, in order of preference.
    public var acrValues: [String]
    /// The resources the grant is for (RFC 8707 §2.1); the provider configuration's when `nil`.
    public var resources: [URL]?
    /// `login_hint`: who is expected to sign in (an email address or a username), so that the
    /// provider's page can fill it in or pick that account.
    public var loginHint: String?

    /// Creates the parameters; every one is optional.
    public init(
        scopes: [String]? = nil, prompt: [String] = [], maxAge: Int? = nil, acrValues: [String] = [],
        resources: [URL]? = nil, loginHint: String? = nil
    ) {
        self.loginHint = loginHint
        self.scopes = scopes
        self.prompt = prompt
        self.maxAge = maxAge
        self.acrValues = acrValues
        self.resources = resources
    }

    /// The `prompt` values to send with `scopes`: the ones asked for, and `consent` when the
    /// scopes ask for `offline_access` (OpenID Connect Core §11), unless `none` was asked (which
    /// may not be combined: such a request gets no refresh token it did not have).
    public func prompt(forScopes scopes: [String]) -> [String] {
        guard scopes.contains("offline_access"), !prompt.contains("consent"), !prompt.contains("none") else {
            return prompt
        }
        return prompt + ["consent"]
    }
}
