import Foundation

/// What the provider's state is made of.
extension ProviderState {
    struct Session {
        var sid: String
        var username: String
        var authTime: Date
        var ended = false
        /// The journey session (PingAM's SSO session) this one was authorized from, if any.
        var journeySession: String?
    }

    /// A back-channel logout owed to a client (OpenID Connect Back-Channel Logout 1.0 §2.5).
    struct LogoutNotice: Sendable {
        var issuer: String
        var clientID: String
        var uri: String
        var subject: String
        /// The session, when the client asked for `sid`.
        var sid: String?
    }

    struct Grant {
        var id: String
        /// The issuer the grant's tokens name: the root one or the Ping realm's.
        var issuer: String
        var clientID: String
        var username: String
        var scopes: [String]
        var sid: String
        var revoked = false
        /// The thumbprint of the DPoP key the grant's tokens are bound to (RFC 9449), if any.
        var jkt: String?
    }

    /// An access token the provider issued, kept by its `jti`.
    struct AccessRecord {
        var grantID: String
        var expiresAt: Date
        var issuedAt: Date
        /// Revoked by itself (RFC 7009) or with its grant.
        var revoked = false
        /// The scopes of this access token when a refresh narrowed them (RFC 6749 §6).
        var scopes: [String]?
        /// The resource it was issued for (RFC 8707), its `aud`.
        var audience: String?
    }

    /// A refresh token the provider issued, kept by its value.
    struct RefreshRecord {
        var grantID: String
        var expiresAt: Date
        var issuedAt: Date
        /// Rotated out by a refresh, or revoked with its grant: presented again, it is a replay,
        /// which revokes the grant when the configuration says so.
        var retired = false
    }

    struct DeviceSecretRecord {
        var username: String
        var sid: String
        var clientID: String
        var scopes: [String]
        var expiresAt: Date
        var issuedAt: Date
        var revoked = false
    }

    struct AuthorizationCode {
        var issuer: String
        var clientID: String
        var redirectURI: String
        var username: String
        var sid: String
        var scopes: [String]
        var nonce: String?
        var codeChallenge: String?
        var expiresAt: Date
        var used = false
        var grantID: String?
    }

    struct DeviceRequest {
        enum Status {
            case pending
            case approved(username: String, sid: String)
            case denied, consumed
        }
        var clientID: String
        var userCode: String
        var scopes: [String]
        /// The one resource the request named (RFC 8707), its access token's audience.
        var audience: String?
        var expiresAt: Date
        var interval: Int
        var lastPoll: Date?
        var status: Status = .pending
    }

    /// The answer to a successful token request, ready to serialize.
    typealias TokenAnswer = [String: Claim]
}
