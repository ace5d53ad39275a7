import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// Shell completions of the names this machine knows: the configured providers and the accounts
/// signed in. The shell runs `latchkey` to ask; the home, store and key options already typed on
/// the command line are honoured. Nothing is created or changed, no provider is asked, and any
/// failure completes nothing.
enum Completions {
    /// The configured providers' names.
    static let providers = CompletionKind.custom { words, _, prefix async in
        let home = home(from: words)
        let names = (try? await home.providers().map(\.name)) ?? []
        return names.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// The accounts signed in, by username, else email, else id (as every command accepts them).
    static let accounts = CompletionKind.custom { words, _, prefix async in
        let home = home(from: words)
        // Completing never creates a store (nor its key).
        guard home.databaseURL != nil || FileManager.default.fileExists(atPath: home.databasePath) else { return [] }
        guard let storage = try? await home.openStorage(), let accounts = try? await storage.accounts() else {
            return []
        }
        let names = accounts.map { $0.metadata.preferredUsername ?? $0.metadata.email ?? $0.id.rawValue }
        return Array(Set(names)).filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// The home the command line names so far (`--home`, `--store`, `--key-file`, as `--x v` or
    /// `--x=v`), else the environment's.
    static func home(from words: [String]) -> Home {
        func value(_ name: String) -> String? {
            for (index, word) in words.enumerated() {
                if word == name, index + 1 < words.count { return words[index + 1] }
                if word.hasPrefix(name + "=") { return String(word.dropFirst(name.count + 1)) }
            }
            return nil
        }
        return Home(explicit: value("--home"), keyFile: value("--key-file"), store: value("--store"))
    }
}
