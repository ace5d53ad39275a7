#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// Unpadded base64url (RFC 4648 §5), as JOSE and PKCE use it.
package enum Base64URL {
    package static func encode(_ data: some DataProtocol) -> String {
        String(
            Data(data).base64EncodedString().unicodeScalars.compactMap { scalar -> Character? in
                switch scalar {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: Character(scalar)
                }
            })
    }

    package static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = String(
            text.unicodeScalars.map { scalar -> Character in
                switch scalar {
                case "-": "+"
                case "_": "/"
                default: Character(scalar)
                }
            })
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}
