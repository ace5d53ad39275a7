import Foundation
import LatchkeyBuildIdentity
import LatchkeyTestSupport
import Testing

/// The build identity the two halves of the tool compare, read from program files: the real
/// executables (checked against `readelf`), and files made here, hostile ones among them.
@Suite("A program's build identity")
struct BuildIdentityTests {
    /// An ELF file of one class and byte order with the given notes in one `PT_NOTE` segment.
    static func elf(wide: Bool, bigEndian: Bool, notes: [UInt8], headerCount: UInt16 = 2) -> [UInt8] {
        func field(_ value: UInt64, _ size: Int) -> [UInt8] {
            let little = (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
            return bigEndian ? little.reversed() : little
        }
        let headerSize = wide ? 64 : 52
        let entrySize = wide ? 56 : 32
        let notesAt = UInt64(headerSize + 2 * entrySize)
        var file = [0x7F, 0x45, 0x4C, 0x46, wide ? 2 : 1, bigEndian ? 2 : 1, 1] + [UInt8](repeating: 0, count: 9)
        file += field(2, 2) + field(62, 2) + field(1, 4)  // type, machine, version
        file += field(0, wide ? 8 : 4) + field(UInt64(headerSize), wide ? 8 : 4) + field(0, wide ? 8 : 4)
        file += field(0, 4) + field(UInt64(headerSize), 2) + field(UInt64(entrySize), 2) + field(UInt64(headerCount), 2)
        file += field(0, 2) + field(0, 2) + field(0, 2)
        for type: UInt64 in [1, 4] {  // PT_LOAD, then PT_NOTE
            var entry = field(type, 4)
            if wide {
                entry += field(0, 4) + field(notesAt, 8) + field(0, 8) + field(0, 8)
                entry += field(UInt64(notes.count), 8) + field(UInt64(notes.count), 8) + field(4, 8)
            } else {
                entry += field(notesAt, 4) + field(0, 4) + field(0, 4) + field(UInt64(notes.count), 4)
                entry += field(UInt64(notes.count), 4) + field(0, 4) + field(4, 4)
            }
            file += entry
        }
        return file + notes
    }

    /// A note: name and description, each padded to four bytes.
    static func note(name: String, type: UInt32, description: [UInt8], bigEndian: Bool = false) -> [UInt8] {
        func word(_ value: Int) -> [UInt8] {
            let little = (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
            return bigEndian ? little.reversed() : little
        }
        let name = Array(name.utf8) + [0]
        func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4) }
        return word(name.count) + word(description.count) + word(Int(type)) + padded(name) + padded(description)
    }

    static func identity(_ file: [UInt8]) -> BuildIdentity? {
        BuildIdentity.of { offset, count in
            guard offset <= UInt64(file.count), count <= file.count - Int(offset) else { return nil }
            return Array(file[Int(offset)..<Int(offset) + count])
        }
    }

    let id: [UInt8] = Array(0..<20)

    @Test("the GNU build ID note, in every ELF class and byte order, after other notes")
    func elfNotes() {
        for wide in [true, false] {
            for bigEndian in [false, true] {
                let notes =
                    Self.note(name: "GNU", type: 1, description: [0, 0, 0, 0, 3, 0, 0, 0], bigEndian: bigEndian)
                    + Self.note(name: "Go", type: 3, description: [9, 9], bigEndian: bigEndian)
                    + Self.note(name: "GNU", type: 3, description: id, bigEndian: bigEndian)
                let file = Self.elf(wide: wide, bigEndian: bigEndian, notes: notes)
                #expect(Self.identity(file)?.bytes == id, "wide \(wide), big-endian \(bigEndian)")
            }
        }
        #expect(BuildIdentity(bytes: id)?.description == "000102030405060708090a0b0c0d0e0f10111213")
    }

    @Test("the UUID of a Mach-O program, after other load commands")
    func machO() {
        let uuid: [UInt8] = Array(100..<116)
        var file: [UInt8] = [0xCF, 0xFA, 0xED, 0xFE] + [UInt8](repeating: 0, count: 12)
        file += [2, 0, 0, 0] + [40, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0]  // two commands, then flags, reserved
        file += [0x19, 0, 0, 0, 16, 0, 0, 0] + [UInt8](repeating: 7, count: 8)  // a segment command
        file += [0x1B, 0, 0, 0, 24, 0, 0, 0] + uuid
        #expect(Self.identity(file)?.bytes == uuid)
    }

    @Test("a file with no identity, or a damaged or hostile one, has none, and nothing traps")
    func damaged() {
        let good = Self.elf(wide: true, bigEndian: false, notes: Self.note(name: "GNU", type: 3, description: id))
        #expect(Self.identity(good) != nil)
        var hostile: [[UInt8]] = [
            [], Array("#!/bin/sh\n".utf8), Array(good.prefix(40)), Array(good.dropLast(5)),
            Self.elf(wide: true, bigEndian: false, notes: Self.note(name: "GNU", type: 3, description: [])),
            Self.elf(wide: true, bigEndian: false, notes: Self.note(name: "GNUX", type: 3, description: id)),
            Self.elf(
                wide: true, bigEndian: false, notes: [0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xFF, count: 20)),
            Self.elf(wide: true, bigEndian: false, notes: good, headerCount: 0xFFFF),
            [0xCF, 0xFA, 0xED, 0xFE] + [UInt8](repeating: 0xFF, count: 40),
            [0xCF, 0xFA, 0xED, 0xFE] + [UInt8](repeating: 0, count: 12) + [1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0]
                + [0, 0, 0, 0] + [0x1B, 0, 0, 0, 24, 0, 0, 0, 1, 2],
        ]
        // Every prefix and every single flipped byte of a good file.
        hostile += (0..<good.count).map { Array(good.prefix($0)) }
        hostile += (0..<good.count).map { index in
            var file = good
            file[index] ^= 0xFF
            return file
        }
        for (index, file) in hostile.enumerated() where index < 10 { #expect(Self.identity(file) == nil, "\(index)") }
        for file in hostile { _ = Self.identity(file) }
    }

    #if os(Linux)
        @Test("the identity read of the built executables is the one readelf prints")
        func builtExecutables() async throws {
            for name in ["latchkey", "latchkey-full"] {
                let readelf = try await ChildProcess.run(
                    URL(fileURLWithPath: "/usr/bin/readelf"), ["-n", Executables.url(name).path], input: "")
                try #require(readelf.status == 0, "\(readelf.stderr)")
                let line = try #require(readelf.stdout.split(separator: "\n").first { $0.contains("Build ID:") })
                let printed = line.split(separator: " ").last.map(String.init)
                #expect(BuildIdentity.of(programAt: Executables.url(name).path)?.description == printed, "\(name)")
            }
        }
    #endif
}
