#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads the claims of a compact JWS without checking its signature.
///
/// Only for display and indexing (the account metadata of a stored credential) and for an
/// expiry a provider stated, where the token was already verified when it was received, or no
/// trust decision rests on it. Anything that decides trust goes through `IDTokenVerifier`
/// (jwt-kit). Written here, not with jwt-kit's parser, so that what reads a stored token loads
/// no JOSE library: the command-line tool's quick commands start in a few milliseconds.
package enum UnverifiedClaims {
    /// The largest token this reader looks at; larger ones are treated as having no claims.
    package static let maximumLength = 64 * 1024

    /// The payload's claims, or `nil` when `jwt` is not a compact JWS (three base64url parts,
    /// a JSON object header) with a JSON object payload.
    package static func read(_ jwt: String) -> [String: JSONValue]? {
        guard jwt.utf8.count <= maximumLength else { return nil }
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(String(parts[0])),
            let payload = Base64URL.decode(String(parts[1])),
            (try? JSONDecoder().decode([String: JSONValue].self, from: header)) != nil
        else { return nil }
        return try? JSONDecoder().decode([String: JSONValue].self, from: payload)
    }
}
