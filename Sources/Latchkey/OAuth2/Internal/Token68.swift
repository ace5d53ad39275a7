/// The one syntax of a credential in an HTTP header: RFC 9110 §11.2's `token68`, which RFC 6750
/// §2.1 calls `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. The
/// access tokens Latchkey takes and the `token68` of a `WWW-Authenticate` challenge are both
/// read by it.
enum Token68 {
    /// Whether `byte` may stand in a token68 before its `=` padding.
    static func isCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
            UInt8(ascii: "/"):
            true
        default: false
        }
    }

    /// Whether all of `text` is one token68.
    static func matches(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        while bytes.last == UInt8(ascii: "=") { bytes = bytes.dropLast() }
        return !bytes.isEmpty && bytes.allSatisfy(isCharacter)
    }
}
