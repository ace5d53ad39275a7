import Foundation

/// `application/x-www-form-urlencoded` text (a form body or a query string) taken apart as
/// servers read it: pairs split on `&`, a name from its value on the first `=`, `+` read as a
/// space. A raw space is kept as it is (clients such as oidc-agent send `scope=openid profile`);
/// a percent sign that does not start an escape of two hexadecimal digits makes the text
/// unreadable.
///
/// Pure and free of Hummingbird, so `scripts/fuzz` compiles it on its own.
enum FormEncoding {
    /// The pairs of `text` in order, or `nil` when an escape in it is malformed.
    static func pairs(_ text: String) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        for field in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            guard let value = parts.count > 1 ? decode(parts[1]) : "" else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }

    /// One name or value with `+` and percent escapes decoded; `nil` for a malformed escape.
    private static func decode(_ encoded: Substring) -> String? {
        let text = encoded.replacingOccurrences(of: "+", with: " ")
        guard text.contains("%") else { return text }
        // Checked here rather than left to Foundation, whose handling of a stray `%` differs
        // between its implementations.
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else {
                    return nil
                }
                index += 3
            } else {
                index += 1
            }
        }
        return text.removingPercentEncoding
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
