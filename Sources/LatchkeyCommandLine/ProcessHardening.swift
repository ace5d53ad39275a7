/// What both halves of the tool do first.
package enum ProcessHardening {
    /// No core file: one would hold decrypted tokens and the store's key.
    package static func disableCoreDumps() {
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        #if canImport(Glibc)
            _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &noCore)
        #else
            _ = setrlimit(RLIMIT_CORE, &noCore)
        #endif
    }
}
