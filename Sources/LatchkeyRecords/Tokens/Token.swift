#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// The tokens one sign-in produced, with what is known about them.
///
/// A `Token` holds an access token from its sign-in or refresh until that access token is revoked
/// (``accessToken`` is then `nil` until a refresh replaces it); it usually holds a refresh token
/// and an ID token, sometimes a device secret (OpenID Connect Native SSO), and for a Ping journey
/// sign-in the SSO session token the OAuth tokens were minted from. It is a value: storing,
/// refreshing and revoking are done by ``CredentialStore`` and the provider types.
///
/// Neither `description` nor `debugDescription` (nor a `dump`) ever shows a token value.
public struct Token: Sendable, Hashable {
    /// The access token (RFC 6749 §1.4); `nil` once it was revoked and not yet replaced.
    public var accessToken: String?
    /// The token type, usually `Bearer` (RFC 6749 §7.1).
    public var tokenType: String
    /// The refresh token, when the provider issued one.
    public var refreshToken: String?
    /// The ID token (OpenID Connect Core §2), when the provider issued one.
    public var idToken: String?
    /// The device secret (OpenID Connect Native SSO), when the provider issued one.
    public var deviceSecret: String?
    /// The SSO session token of a Ping journey sign-in (AM's `tokenId`), from which new OAuth
    /// tokens are minted without asking the user again (see ``PingJourneyProvider``).
    public var sessionToken: String?
    /// The granted scopes, in the order the provider listed them; `nil` when it did not say.
    public var scopes: [String]?
    /// When the token response was received.
    public var issuedAt: Date
    /// When the access token expires; `nil` when the provider did not say.
    public var expiresAt: Date?
    /// The provider and client the tokens came from.
    public var provider: ProviderIdentity
    /// Fields of the token response that Latchkey does not model, kept as they came.
    public var additionalFields: [String: JSONValue]
    /// The key the tokens are bound to (DPoP, RFC 9449), or `nil` for bearer tokens. Its private
    /// half is sealed with the tokens and never shown.
    public var dpop: DPoPBinding?
    /// Access tokens for single resources (RFC 8707), by ``ResourceToken/key(resource:scopes:)``,
    /// got with ``refreshToken``. A sign-out or a revocation of the access token covers them.
    public var resourceTokens: [String: ResourceToken]
    /// The resources the grant was asked for at sign-in (RFC 8707 §2.1), when any were: many
    /// providers issue a resource's token (``resourceTokens``) only for those.
    public var resources: [String]?

    /// Creates a token from its parts.
    public init(
        accessToken: String?,
        tokenType: String = "Bearer",
        refreshToken: String? = nil,
        idToken: String? = nil,
        deviceSecret: String? = nil,
        sessionToken: String? = nil,
        scopes: [String]? = nil,
        issuedAt: Date,
        expiresAt: Date? = nil,
        provider: ProviderIdentity,
        additionalFields: [String: JSONValue] = [:],
        dpop: DPoPBinding? = nil,
        resourceTokens: [String: ResourceToken] = [:]
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.deviceSecret = deviceSecret
        self.sessionToken = sessionToken
        self.scopes = scopes
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.provider = provider
        self.additionalFields = additionalFields
        self.dpop = dpop
        self.resourceTokens = resourceTokens
    }

    /// Splits an RFC 6749 §3.3 scope string into its scope tokens.
    package static func scopes(from scope: String) -> [String] {
        scope.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    }

    /// The granted scopes as an RFC 6749 §3.3 space-separated string.
    public var scope: String? { scopes?.joined(separator: " ") }

    /// Whether the access token has expired at `date` (a token with no expiry never does).
    public func isExpired(at date: Date = Date()) -> Bool {
        expires(within: 0, at: date)
    }

    /// Whether the access token expires within `margin` seconds of `date`.
    public func expires(within margin: TimeInterval, at date: Date = Date()) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt.timeIntervalSince(date) <= margin
    }

    /// Whether anything in this token can still get the account an access token: an access
    /// token that has not expired, a refresh token, a device secret, or a session token.
    public func isUsable(at date: Date = Date()) -> Bool {
        refreshToken != nil || deviceSecret != nil || sessionToken != nil
            || (accessToken != nil && !isExpired(at: date))
    }

    /// When the token of `kind` expires, as far as the provider said: the access token's
    /// `expires_in`; for the refresh token a positive `refresh_expires_in` (Keycloak and others
    /// send it) or the `exp` of a refresh token that is a JWT; for the ID token and the device
    /// secret their `exp` when they are JWTs. `nil` when nobody said (a session token's end
    /// depends on its use): such a token may live for years.
    public func expiry(of kind: TokenKind) -> Date? {
        func jwtExpiry(_ value: String?) -> Date? {
            guard let value, let exp = UnverifiedClaims.read(value)?["exp"]?.doubleValue, exp.isFinite else {
                return nil
            }
            return Date(timeIntervalSince1970: exp)
        }
        switch kind {
        case .accessToken:
            return expiresAt
        case .refreshToken:
            if let seconds = additionalFields["refresh_expires_in"]?.doubleValue, seconds.isFinite, seconds > 0 {
                return issuedAt.addingTimeInterval(ProviderNumbers.seconds(seconds, fallback: 0))
            }
            return jwtExpiry(refreshToken)
        case .idToken:
            return jwtExpiry(idToken)
        case .deviceSecret:
            return jwtExpiry(deviceSecret)
        case .sessionToken:
            return nil
        }
    }

    /// The value of the token of `kind`, if this token holds one.
    public func value(of kind: TokenKind) -> String? {
        switch kind {
        case .accessToken: accessToken
        case .refreshToken: refreshToken
        case .idToken: idToken
        case .deviceSecret: deviceSecret
        case .sessionToken: sessionToken
        }
    }

    /// Every value of `kind` this token holds, each once: for the access token, the resources'
    /// access tokens too (``resourceTokens``; a sign-in's for one resource is also that
    /// resource's); one value or none for the other kinds.
    public func values(of kind: TokenKind) -> [String] {
        let value = self.value(of: kind).map { [$0] } ?? []
        guard kind == .accessToken else { return value }
        let resources = resourceTokens.keys.sorted().compactMap { resourceTokens[$0]?.accessToken }
        var seen = Set<String>()
        return (value + resources).filter { seen.insert($0).inserted }
    }

    /// Forgets the token of `kind` (after it was revoked). Forgetting the access token forgets
    /// its expiry too.
    public mutating func discard(_ kind: TokenKind) {
        switch kind {
        case .accessToken:
            accessToken = nil
            expiresAt = nil
            resourceTokens = [:]
        case .refreshToken: refreshToken = nil
        case .idToken: idToken = nil
        case .deviceSecret: deviceSecret = nil
        case .sessionToken: sessionToken = nil
        }
    }

    /// The kinds of token this value holds.
    public var kinds: Set<TokenKind> {
        var kinds: Set<TokenKind> = []
        if accessToken != nil { kinds.insert(.accessToken) }
        if refreshToken != nil { kinds.insert(.refreshToken) }
        if idToken != nil { kinds.insert(.idToken) }
        if deviceSecret != nil { kinds.insert(.deviceSecret) }
        if sessionToken != nil { kinds.insert(.sessionToken) }
        return kinds
    }
}

/// The kinds of token a ``Token`` can hold.
public enum TokenKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The access token.
    case accessToken = "access_token"
    /// The refresh token.
    case refreshToken = "refresh_token"
    /// The ID token.
    case idToken = "id_token"
    /// The device secret of OpenID Connect Native SSO.
    case deviceSecret = "device_secret"
    /// The SSO session token of a Ping journey (AM's `tokenId`). Its "revocation" is the
    /// session's logout.
    case sessionToken = "session_token"

    public var description: String { rawValue }
}

extension Token: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A summary that names which tokens are present, never their values.
    public var description: String {
        var parts = ["type: \(tokenType)", "provider: \(provider)"]
        parts.append("tokens: [\(TokenKind.allCases.filter(kinds.contains).map(\.rawValue).joined(separator: ", "))]")
        if let scope { parts.append("scope: \(scope)") }
        if let expiresAt { parts.append("expiresAt: \(expiresAt.formatted(.iso8601))") }
        if !resourceTokens.isEmpty { parts.append("resourceTokens: \(resourceTokens.count)") }
        if let dpop { parts.append("dpop: \(dpop.thumbprint)\(dpop.isKeyAvailable ? "" : " (key missing)")") }
        return "Token(\(parts.joined(separator: ", ")))"
    }

    /// Same as `description`: token values are never shown.
    public var debugDescription: String { description }

    /// A mirror without the token values, so `dump(token)` cannot print them either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "tokenType": tokenType, "provider": provider, "kinds": kinds.map(\.rawValue).sorted(),
                "scopes": scopes as Any, "issuedAt": issuedAt, "expiresAt": expiresAt as Any,
                "dpop": dpop as Any, "resourceTokens": resourceTokens.count,
            ],
            displayStyle: .struct
        )
    }
}

extension Token: Codable {
    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
        case deviceSecret = "device_secret"
        case sessionToken = "session_token"
        case scopes
        case issuedAt = "issued_at"
        case expiresAt = "expires_at"
        case provider
        case additionalFields = "additional_fields"
        case dpopThumbprint = "dpop_jkt"
        case dpopKey = "dpop_key"
        case resourceTokens = "resource_tokens"
        case resources
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decodeIfPresent(String.self, forKey: .accessToken)
        tokenType = try container.decode(String.self, forKey: .tokenType)
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        deviceSecret = try container.decodeIfPresent(String.self, forKey: .deviceSecret)
        sessionToken = try container.decodeIfPresent(String.self, forKey: .sessionToken)
        scopes = try container.decodeIfPresent([String].self, forKey: .scopes)
        issuedAt = try container.decode(Date.self, forKey: .issuedAt)
        expiresAt = try container.decodeIfPresent(Date.self, forKey: .expiresAt)
        provider = try container.decode(ProviderIdentity.self, forKey: .provider)
        additionalFields = try container.decodeIfPresent([String: JSONValue].self, forKey: .additionalFields) ?? [:]
        resourceTokens = try container.decodeIfPresent([String: ResourceToken].self, forKey: .resourceTokens) ?? [:]
        resources = try container.decodeIfPresent([String].self, forKey: .resources)
        if let thumbprint = try container.decodeIfPresent(String.self, forKey: .dpopThumbprint) {
            // A key that is missing or is no key leaves the binding without it: the account must
            // sign in again, and nothing else is lost.
            let key = (try? container.decodeIfPresent(String.self, forKey: .dpopKey))
                .flatMap { Base64URL.decode($0) }.flatMap { DPoPKey(rawRepresentation: $0) }
            dpop = DPoPBinding(thumbprint: thumbprint, key: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(accessToken, forKey: .accessToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encodeIfPresent(idToken, forKey: .idToken)
        try container.encodeIfPresent(deviceSecret, forKey: .deviceSecret)
        try container.encodeIfPresent(sessionToken, forKey: .sessionToken)
        try container.encodeIfPresent(scopes, forKey: .scopes)
        try container.encode(issuedAt, forKey: .issuedAt)
        try container.encodeIfPresent(expiresAt, forKey: .expiresAt)
        try container.encode(provider, forKey: .provider)
        if !additionalFields.isEmpty { try container.encode(additionalFields, forKey: .additionalFields) }
        if !resourceTokens.isEmpty { try container.encode(resourceTokens, forKey: .resourceTokens) }
        try container.encodeIfPresent(resources, forKey: .resources)
        if let dpop {
            try container.encode(dpop.thumbprint, forKey: .dpopThumbprint)
            try container.encodeIfPresent(dpop.key.map { Base64URL.encode($0.rawRepresentation) }, forKey: .dpopKey)
        }
    }
}

extension Token {
    /// When the ID token expires (its `exp` claim, read without verification: Latchkey verifies
    /// an ID token before it stores one), or nil when there is no ID token or it has no `exp`.
    public var idTokenExpiresAt: Date? {
        guard let idToken, case .number(let exp)? = UnverifiedClaims.read(idToken)?["exp"] else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}
