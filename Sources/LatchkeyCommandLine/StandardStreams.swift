import Synchronization

/// Writes all of `bytes` to `descriptor` (write(2) may write part of them, or be interrupted);
/// whether all were written. A reader that went away (`EPIPE`: `latchkey … | head -1`) is not an
/// error that ends the process: what is left is dropped, and the pending `SIGPIPE` ends it once
/// no refresh is under way (Foundation's `FileHandle.write(_:)` traps instead).
@discardableResult
package func writeAll(_ descriptor: Int32, _ bytes: some Collection<UInt8>) -> Bool {
    var rest = Array(bytes)[...]
    while !rest.isEmpty {
        let written = rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else {
            if written < 0, errno == EPIPE { ReaderGone.flag.store(true, ordering: .relaxed) }
            return false
        }
        rest = rest.dropFirst(written)
    }
    return true
}

/// Whether a write found its reader gone (`EPIPE`): the `SIGPIPE` that came with it is pending
/// on the writing thread only, so the tool asks this on its way out to end as that signal would
/// have ended it.
package enum ReaderGone {
    static let flag = Atomic<Bool>(false)

    /// Whether a write found its reader gone.
    package static var happened: Bool { flag.load(ordering: .relaxed) }
}

/// Writes `text` to `descriptor` (see ``writeAll(_:_:)``).
@discardableResult
package func writeAll(_ descriptor: Int32, _ text: String) -> Bool {
    writeAll(descriptor, Array(text.utf8))
}
