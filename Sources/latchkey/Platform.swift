// `latchkey`'s platform is `LatchkeyCommandLine`'s, the tool's one shim: Foundation Essentials
// (not Foundation, which would load ICU and CoreFoundation into every quick answer) and the C
// library, for every file.
@_exported import LatchkeyCommandLine
