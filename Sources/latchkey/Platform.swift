// The one platform shim of `latchkey`: Foundation Essentials (not Foundation, which would load
// ICU and CoreFoundation into every quick answer) and the C library, for every file.
#if canImport(FoundationEssentials)
    @_exported import FoundationEssentials
#else
    @_exported import Foundation
#endif
#if canImport(Glibc)
    @_exported import Glibc
#elseif canImport(Musl)
    @_exported import Musl
#elseif canImport(Darwin)
    @_exported import Darwin
#endif
