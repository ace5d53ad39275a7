import Foundation
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// Builders for test tokens and throwaway folders.
enum Fixtures {
    static let provider = ProviderIdentity(issuer: "https://issuer.example", clientID: "latchkey-tests")

    /// A compact JWS whose payload is `claims` (unsigned: the store only reads claims).
    static func idToken(_ claims: [String: String]) -> String {
        func encode(_ object: [String: String]) -> String {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return data.base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return "\(encode(["alg": "RS256", "typ": "JWT"])).\(encode(claims)).c2lnbmF0dXJl"
    }

    /// A token for the account `user`, with distinctive secret values that tests search for.
    static func token(
        user: String,
        email: String? = nil,
        subject: String? = nil,
        expiresIn: TimeInterval = 3600,
        deviceSecret: Bool = false
    ) -> Token {
        var claims = [
            "sub": subject ?? "sub-\(user)", "preferred_username": user, "name": "\(user.capitalized) Example",
        ]
        claims["email"] = email ?? "\(user)@example.com"
        claims["iss"] = provider.issuer
        return Token(
            accessToken: "SECRET-ACCESS-\(user)-\(UUID().uuidString)",
            refreshToken: "SECRET-REFRESH-\(user)-\(UUID().uuidString)",
            idToken: idToken(claims),
            deviceSecret: deviceSecret ? "SECRET-DEVICE-\(user)-\(UUID().uuidString)" : nil,
            scopes: ["openid", "profile", "email", "offline_access"],
            issuedAt: Date(timeIntervalSince1970: 1_800_000_000),
            expiresAt: Date(timeIntervalSince1970: 1_800_000_000 + expiresIn),
            provider: provider)
    }
}

/// Every storage backend, for tests that must hold for each one.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case sqlite

    var testDescription: String { rawValue }

    /// New, empty storage of this kind, and the folder to clean up afterwards.
    func makeStorage() throws -> (any CredentialStorage & OutboxStorage, TemporaryFolder?) {
        switch self {
        case .memory:
            return (InMemoryCredentialStorage(), nil)
        case .sqlite:
            let folder = try TemporaryFolder()
            return (try SQLiteCredentialStorage(path: folder.file("credentials.sqlite")), folder)
        }
    }
}
