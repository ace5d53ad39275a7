// `latchkey-full`'s platform is `LatchkeyCommandLine`'s, the tool's one shim: the C library
// (signals, file descriptors, terminals) for every file; a file that needs all of Foundation
// imports it.
@_exported import LatchkeyCommandLine
