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

extension Fixtures {
    /// Adds `user`'s tokens to the SQLite store at `path` and closes the store before returning.
    /// A store that is only released closes a moment later, on whichever thread lets go of it
    /// last (a task that read for it, say), and moves its WAL into the database file then: a
    /// test that edits or snapshots the files next must find them closed.
    @discardableResult
    static func addClosed(
        user: String, to path: String, key: SQLiteCredentialStorage.KeySource = .keyFileBesideDatabase
    ) async throws -> StoredCredential {
        let storage = try await SQLiteCredentialStorage.open(path: path, key: key)
        let credential = try await CredentialStore(storage: storage).add(token(user: user))
        try storage.close()
        return credential
    }
}
