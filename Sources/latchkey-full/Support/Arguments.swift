public import ArgumentParser
public import Latchkey

// Library enums the parser reads: a bad value gets the parser's own error, and completions list
// the values.
extension SignOutPolicy: ExpressibleByArgument {}
extension RevocationScope: ExpressibleByArgument {}
