import LatchkeyCommandLine

/// `latchkey`: answers the commands that programs call many times a minute — `token`,
/// `credential git get`, `credential kubectl` — straight from the SQLite store when the token
/// they need is valid, and hands everything else to `latchkey-full` (``Handover``), which does
/// what this does not: refreshes, PostgreSQL stores, keys in a keyring, every error message.
///
/// It decides nothing of its own: what it reads is read by the store's rules
/// (`SQLiteStoreReader`), a token is valid by the library's own rule
/// (`StoredCredential.needsRefresh`), and what it prints is written by the code the full tool
/// prints with (`LatchkeyCommandLine`). When in doubt, it hands over.
@main
enum QuickLatchkey {
    static func main() {
        ProcessHardening.disableCoreDumps()
        let arguments = CommandLine.arguments
        // The few variables the quick answers read, each on its own: the whole environment as a
        // dictionary costs more than the rest of `main`'s own work.
        var environment: [String: String] = [:]
        for name in HomeLocation.variables + [
            "LATCHKEY_LOG", "KUBERNETES_EXEC_INFO", AccountChoice.variable, QuickAgent.variable,
        ] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        // Without a home in the environment, the home is the user database's: the full tool
        // reads it (this program may be a static one, which reaches that database only through
        // the modules of the very glibc it was linked with).
        guard ["LATCHKEY_HOME", "XDG_CONFIG_HOME", "HOME"].contains(where: { environment[$0]?.isEmpty == false })
        else { Handover.run(arguments, input: nil) }
        var input: [UInt8]? = nil
        // Diagnostics are the full tool's: it logs what it does.
        if environment["LATCHKEY_LOG"].map(\.isEmpty) ?? true,
            let command = QuickCommand(arguments: Array(arguments.dropFirst()))
        {
            switch command.answer(environment: environment) {
            case .answered:
                exit(0)
            case .handOver(let consumed):
                input = consumed
            }
        }
        Handover.run(arguments, input: input)
    }
}
