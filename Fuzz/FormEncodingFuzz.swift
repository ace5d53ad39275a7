// libFuzzer harness for the development provider's form and query parsing (`FormEncoding`): any
// body or query a client sends is read or refused, and nothing traps.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let pairs = FormEncoding.pairs(text) {
        // Every pair came from a field of the text.
        precondition(pairs.count <= text.split(separator: "&").count)
    }
    return 0
}
