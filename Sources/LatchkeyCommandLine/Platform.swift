// The one platform shim of `LatchkeyCommandLine`, which both halves of the tool link: Foundation
// Essentials where there is one (the quick half loads nothing more), and the C library.
#if canImport(FoundationEssentials)
    @_exported public import FoundationEssentials
#else
    @_exported public import Foundation
#endif
#if canImport(Glibc)
    @_exported public import Glibc
#elseif canImport(Musl)
    @_exported public import Musl
#elseif canImport(Darwin)
    @_exported public import Darwin
#endif
