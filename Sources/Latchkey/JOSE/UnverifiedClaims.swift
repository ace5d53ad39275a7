import Foundation

/// Reads the claims of a compact JWS without checking its signature.
///
/// Only for display and indexing (the account metadata of a stored credential), where the
/// token was already verified when it was received. Anything that makes a trust decision goes
/// through the verifying path instead.
enum UnverifiedClaims {
    /// The largest token this reader looks at; larger ones are treated as having no claims.
    static let maximumLength = 64 * 1024

    /// The payload's claims, or `nil` when `jwt` is not a compact JWS with a JSON object payload.
    static func read(_ jwt: String) -> [String: JSONValue]? {
        guard jwt.utf8.count <= maximumLength else { return nil }
        let segments = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let payload = base64URLDecode(segments[1]) else { return nil }
        return try? JSONDecoder().decode([String: JSONValue].self, from: payload)
    }

    /// Decodes unpadded base64url (RFC 4648 §5, as JWS uses it).
    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}
