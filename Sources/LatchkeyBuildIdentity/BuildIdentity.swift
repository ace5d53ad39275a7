/// What tells two builds of a program apart: the identity its linker stamped into the file — the
/// GNU build ID note of an ELF program (a hash of what was linked), the `LC_UUID` load command
/// of a Mach-O one. Two builds of different code never share one; a version string, set by
/// hand, can. `latchkey` carries the identity of the `latchkey-full` it was built with, and
/// the full tool compares it with its own before it runs a command handed over.
package struct BuildIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The identity's bytes, as the linker wrote them.
    package let bytes: [UInt8]

    /// An identity of `bytes`; `nil` when there are none.
    package init?(bytes: [UInt8]) {
        guard !bytes.isEmpty else { return nil }
        self.bytes = bytes
    }

    /// The identity as lower-case hexadecimal, as `readelf -n` prints a build ID.
    package var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The identity stamped in a program file, read through `read` (`count` bytes at `offset`,
    /// or `nil` past the file's end): `nil` when the file is no ELF or Mach-O program, carries no
    /// identity, or is damaged. Nothing in the file can make it trap or read without bound.
    package static func of(program read: ProgramReader) -> BuildIdentity? {
        guard let magic = read(0, 4) else { return nil }
        if magic == [0x7F, 0x45, 0x4C, 0x46] { return ELF.buildID(read) }
        if let macho = MachO(magic: magic) { return macho.uuid(read) }
        return nil
    }
}

/// Reads `count` bytes of a file at `offset`: all of them, or `nil`.
package typealias ProgramReader = (_ offset: UInt64, _ count: Int) -> [UInt8]?

/// The fields of a file, read in its byte order.
struct FieldReader {
    let bigEndian: Bool

    func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64? {
        guard offset >= 0, size <= 8, offset <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for index in 0..<size {
            let byte = UInt64(bytes[offset + (bigEndian ? index : size - 1 - index)])
            value = value << 8 | byte
        }
        return value
    }
}
