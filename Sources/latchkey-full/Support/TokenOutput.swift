import ArgumentParser
import LatchkeyCommandLine

extension TokenValidity: ExpressibleByArgument {
    init?(argument: String) { self.init(text: argument) }

    static var defaultCompletionKind: CompletionKind { .list(["60", "5m", "1h"]) }
}

extension TokenFormat: ExpressibleByArgument {}
