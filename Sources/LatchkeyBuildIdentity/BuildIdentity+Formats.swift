/// ELF: the `NT_GNU_BUILD_ID` note in a `PT_NOTE` segment, found through the program headers.
enum ELF {
    /// Program headers read at most (a program has about a dozen).
    static let maximumHeaders = 256
    /// The most bytes of one note segment read.
    static let maximumNoteBytes = 1 << 16

    static func buildID(_ read: ProgramReader) -> BuildIdentity? {
        guard let ident = read(0, 64), ident.count == 64 else { return nil }
        let wide = ident[4] == 2
        guard ident[4] == 1 || wide, ident[5] == 1 || ident[5] == 2 else { return nil }
        let fields = FieldReader(bigEndian: ident[5] == 2)
        guard let headersAt = fields.integer(ident, at: wide ? 0x20 : 0x1C, size: wide ? 8 : 4),
            let entrySize = fields.integer(ident, at: wide ? 0x36 : 0x2A, size: 2),
            let count = fields.integer(ident, at: wide ? 0x38 : 0x2C, size: 2),
            entrySize >= (wide ? 56 : 32), count <= maximumHeaders
        else { return nil }
        for index in 0..<count {
            let (at, overflow) = headersAt.addingReportingOverflow(index * entrySize)
            guard !overflow, let header = read(at, Int(entrySize)) else { return nil }
            guard fields.integer(header, at: 0, size: 4) == 4,  // PT_NOTE
                let offset = fields.integer(header, at: wide ? 8 : 4, size: wide ? 8 : 4),
                let size = fields.integer(header, at: wide ? 0x20 : 0x10, size: wide ? 8 : 4),
                let align = fields.integer(header, at: wide ? 0x30 : 0x1C, size: wide ? 8 : 4),
                size <= maximumNoteBytes, let notes = read(offset, Int(size))
            else { continue }
            if let id = gnuBuildID(in: notes, fields: fields, padding: align == 8 ? 8 : 4) { return id }
        }
        return nil
    }

    /// The build ID among `notes`: name size, description size and type, then the name and the
    /// description, each padded to `padding`.
    static func gnuBuildID(in notes: [UInt8], fields: FieldReader, padding: Int) -> BuildIdentity? {
        func padded(_ size: Int) -> Int { (size + padding - 1) / padding * padding }
        var at = 0
        while let nameSize = fields.integer(notes, at: at, size: 4),
            let descriptionSize = fields.integer(notes, at: at + 4, size: 4),
            let type = fields.integer(notes, at: at + 8, size: 4),
            nameSize <= UInt64(notes.count), descriptionSize <= UInt64(notes.count)
        {
            let nameAt = at + 12
            let descriptionAt = nameAt + padded(Int(nameSize))
            let end = descriptionAt + padded(Int(descriptionSize))
            guard descriptionAt + Int(descriptionSize) <= notes.count else { return nil }
            if type == 3, nameSize == 4, Array(notes[nameAt..<nameAt + 4]) == Array("GNU\0".utf8) {
                return BuildIdentity(bytes: Array(notes[descriptionAt..<descriptionAt + Int(descriptionSize)]))
            }
            at = end
        }
        return nil
    }
}

/// Mach-O: the `LC_UUID` load command of a thin program (a universal file is not read).
struct MachO {
    /// Load commands read at most.
    static let maximumCommands: UInt64 = 4096

    let wide: Bool
    let fields: FieldReader

    init?(magic: [UInt8]) {
        switch magic {
        case [0xCF, 0xFA, 0xED, 0xFE]: (wide, fields) = (true, FieldReader(bigEndian: false))
        case [0xCE, 0xFA, 0xED, 0xFE]: (wide, fields) = (false, FieldReader(bigEndian: false))
        case [0xFE, 0xED, 0xFA, 0xCF]: (wide, fields) = (true, FieldReader(bigEndian: true))
        case [0xFE, 0xED, 0xFA, 0xCE]: (wide, fields) = (false, FieldReader(bigEndian: true))
        default: return nil
        }
    }

    func uuid(_ read: ProgramReader) -> BuildIdentity? {
        guard let header = read(0, 28), let count = fields.integer(header, at: 16, size: 4),
            count <= Self.maximumCommands
        else { return nil }
        var at: UInt64 = wide ? 32 : 28
        for _ in 0..<count {
            guard let command = read(at, 8), let kind = fields.integer(command, at: 0, size: 4),
                let size = fields.integer(command, at: 4, size: 4), size >= 8
            else { return nil }
            if kind == 0x1B {  // LC_UUID
                guard size >= 24, let uuid = read(at + 8, 16) else { return nil }
                return BuildIdentity(bytes: uuid)
            }
            at += size
        }
        return nil
    }
}
