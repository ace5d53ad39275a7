#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension BuildIdentity {
    /// The identity stamped in the program file at `path`; `nil` when it cannot be read or
    /// carries none.
    package static func of(programAt path: String) -> BuildIdentity? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return of { offset, count in
            guard count > 0 else { return count == 0 ? [] : nil }
            guard let start = off_t(exactly: offset) else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let read = bytes.withUnsafeMutableBytes { buffer in
                    pread(descriptor, buffer.baseAddress.map { $0 + done }, count - done, start + off_t(done))
                }
                if read < 0, errno == EINTR { continue }
                guard read > 0 else { return nil }
                done += read
            }
            return bytes
        }
    }

    /// The identity of the program this process runs; `nil` when its file cannot be read.
    package static func ofRunningProgram() -> BuildIdentity? {
        #if os(Linux)
            return of(programAt: "/proc/self/exe")
        #elseif canImport(Darwin)
            var size: UInt32 = 0
            _ = _NSGetExecutablePath(nil, &size)
            var path = [CChar](repeating: 0, count: Int(size) + 1)
            guard _NSGetExecutablePath(&path, &size) == 0 else { return nil }
            return of(programAt: String(decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        #else
            return nil
        #endif
    }
}
