public import Foundation

/// The claims of a JWT whose signature and checks passed (an ID token, a logout token): every
/// claim as it came, and the registered ones by name.
public protocol VerifiedClaims: Sendable {
    /// What such a token is called in an error's description ("ID token").
    static var tokenName: String { get }
    /// Every claim, as it came.
    var all: [String: JSONValue] { get }
}

extension VerifiedClaims {
    /// "token", unless the type names its kind.
    public static var tokenName: String { "token" }

    /// `iss`.
    public var issuer: String? { all["iss"]?.stringValue }
    /// `sub`.
    public var subject: String? { all["sub"]?.stringValue }
    /// `sid`, the provider's session id.
    public var sessionID: String? { all["sid"]?.stringValue }
    /// `jti`.
    public var id: String? { all["jti"]?.stringValue }
    /// `nonce`.
    public var nonce: String? { all["nonce"]?.stringValue }
    /// `iat`.
    public var issuedAt: Date? { date("iat") }
    /// `exp`, when the token has one.
    public var expiresAt: Date? { date("exp") }

    private func date(_ name: String) -> Date? { all[name]?.doubleValue.map(Date.init(timeIntervalSince1970:)) }
}

/// The claims of a verified ID token (their registered names read through ``VerifiedClaims``).
public struct IDTokenClaims: VerifiedClaims, Hashable {
    /// What the token is called in ``TokenRejection``'s description.
    public static let tokenName = "ID token"

    /// Every claim, as it came.
    public var all: [String: JSONValue]
}

/// The claims of a verified logout token: whose sessions end (`sub`: every session of this
/// user, unless `sid` names one), and its `jti` for the replay check (see ``VerifiedClaims``).
public struct LogoutTokenClaims: VerifiedClaims, Hashable {
    /// What the token is called in ``TokenRejection``'s description.
    public static let tokenName = "logout token"

    /// Every claim, as it came.
    public var all: [String: JSONValue]
}
