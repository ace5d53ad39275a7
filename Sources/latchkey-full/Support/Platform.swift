// The one platform shim of `latchkey-full`: the C library, for every file (signals, file
// descriptors, terminals), beside Foundation.
#if canImport(Glibc)
    @_exported import Glibc
#elseif canImport(Musl)
    @_exported import Musl
#elseif canImport(Darwin)
    @_exported import Darwin
#endif
