/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1, §11.2): its scheme and its
/// parameters. The one parser of those headers in Latchkey: a provider's refusal and a resource
/// server's answer are read the same way.
package struct AuthenticationChallenge: Sendable, Hashable {
    /// The scheme, in lowercase (`bearer`, `dpop`, `basic`).
    package var scheme: String
    /// The parameters, their names in lowercase and quoted values unquoted. A challenge's
    /// `token68` (`Basic abc==`) is kept under the name `token68`.
    package var parameters: [String: String]

    /// Every challenge of the headers' values.
    package static func parse(_ values: [String]) -> [AuthenticationChallenge] {
        values.flatMap(parse)
    }

    /// Every challenge of one header value, e.g.
    /// `Bearer realm="example", error="invalid_token", DPoP algs="ES256"`.
    package static func parse(_ value: String) -> [AuthenticationChallenge] {
        var scanner = Scanner(Array(value.utf8))
        var challenges: [AuthenticationChallenge] = []
        while true {
            scanner.skip { $0 == UInt8(ascii: ",") || Scanner.isSpace($0) }
            guard let name = scanner.token() else { break }
            // A token followed by `=` is a parameter of the challenge being read; any other
            // token starts a challenge.
            scanner.skip(Scanner.isSpace)
            if scanner.peek == UInt8(ascii: "="), var current = challenges.popLast() {
                scanner.advance()
                scanner.skip(Scanner.isSpace)
                current.parameters[name.lowercased()] = scanner.quotedString() ?? scanner.token() ?? ""
                challenges.append(current)
                continue
            }
            var challenge = AuthenticationChallenge(scheme: name.lowercased(), parameters: [:])
            // A token68 right after the scheme: token characters, then any `=` padding, then a
            // comma or the end.
            let start = scanner.position
            if let token68 = scanner.token68(), scanner.atChallengeEnd {
                challenge.parameters["token68"] = token68
            } else {
                scanner.position = start
            }
            challenges.append(challenge)
        }
        return challenges
    }

    /// The OAuth error a challenge carries (RFC 6750 §3), if any.
    package var error: OAuthErrorCode? { parameters["error"].map(OAuthErrorCode.init(rawValue:)) }

    /// A byte scanner over a header value.
    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }
        mutating func advance() { position += 1 }

        mutating func skip(_ predicate: (UInt8) -> Bool) {
            while let byte = peek, predicate(byte) { advance() }
        }

        static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

        /// RFC 9110 §5.6.2 `tchar`.
        static func isTokenCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }

        mutating func token() -> String? {
            let start = position
            skip(Self.isTokenCharacter)
            return position > start ? String(decoding: bytes[start..<position], as: UTF8.self) : nil
        }

        /// RFC 9110 §11.2 `token68` (``Token68``): letters, digits and `-._~+/`, then `=` padding.
        mutating func token68() -> String? {
            let start = position
            skip(Token68.isCharacter)
            guard position > start else { return nil }
            skip { $0 == UInt8(ascii: "=") }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        /// Whether only spaces are left before a comma or the end.
        var atChallengeEnd: Bool {
            var index = position
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            return index == bytes.count || bytes[index] == UInt8(ascii: ",")
        }

        /// A quoted string with its escapes undone, or `nil` when none starts here.
        mutating func quotedString() -> String? {
            guard peek == UInt8(ascii: "\"") else { return nil }
            advance()
            var value: [UInt8] = []
            while let byte = peek {
                advance()
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\"), let escaped = peek {
                    value.append(escaped)
                    advance()
                } else {
                    value.append(byte)
                }
            }
            return String(decoding: value, as: UTF8.self)
        }
    }
}
