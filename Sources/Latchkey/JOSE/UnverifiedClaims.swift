import Foundation
import JWTKit

/// Reads the claims of a compact JWS without checking its signature, with jwt-kit's parser.
///
/// Only for display and indexing (the account metadata of a stored credential) and for an
/// expiry a provider stated, where the token was already verified when it was received, or no
/// trust decision rests on it. Anything that decides trust goes through ``IDTokenVerifier``.
enum UnverifiedClaims {
    /// The largest token this reader looks at; larger ones are treated as having no claims.
    static let maximumLength = 64 * 1024

    /// The payload's claims, or `nil` when `jwt` is not a compact JWS with a JSON object payload.
    static func read(_ jwt: String) -> [String: JSONValue]? {
        guard jwt.utf8.count <= maximumLength else { return nil }
        return try? DefaultJWTParser().parse(Array(jwt.utf8), as: AnyClaims.self).payload.all
    }
}
