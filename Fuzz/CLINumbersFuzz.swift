// libFuzzer harness for the command-line tool's number handling (`CLINumbers`): whatever text an
// environment variable holds, whatever number a provider's claim or a date carries, nothing traps.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    let seconds = CLINumbers.seconds(text, fallback: 5, in: 0.1...86_400)
    precondition(seconds.isFinite && seconds >= 0.1 && seconds <= 86_400)
    _ = CLINumbers.duration(seconds: seconds)
    if bytes.count >= 8 {
        let bits = bytes.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * $1.offset) }
        let number = Double(bitPattern: bits)
        _ = CLINumbers.text(number)
        _ = CLINumbers.duration(seconds: number)
        if number.isFinite { _ = CLINumbers.epochSeconds(Date(timeIntervalSince1970: number)) }
    }
    if let number = Double(text) { _ = CLINumbers.text(number) }
    return 0
}
