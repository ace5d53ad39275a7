import Foundation
import Latchkey
import LatchkeyCommandLine
import Logging
import SystemPackage

/// The provider list's part in `latchkey key rotate`: its client secrets are sealed under the
/// store's key, so they change key with the store, all or nothing. The rotation writes the list
/// sealed under the new key to `providers.json.next` before the store is sealed again, and puts
/// it in place once the store was. A rotation cut short (a SIGKILL, a power loss) is settled by
/// the next command: the waiting list is put in place when its secrets open with the store's key
/// (the store was sealed again), and otherwise left to the rotation that wrote it. Several
/// commands may settle it at once: the first puts it in place, and the others find it gone.
extension Home {
    /// Where a rotation keeps the provider list sealed under the new key until the store is.
    var pendingProvidersFile: URL { location.pendingProvidersFile }

    /// Whether a rotation left a provider list waiting.
    var hasPendingProviders: Bool { FileManager.default.fileExists(atPath: pendingProvidersFile.path) }

    /// Writes `providers` (sealed under the new key) to the waiting list, replacing a leftover of
    /// a rotation that never finished: mode 0600 from the start, synced before the store changes.
    func writePendingProviders(_ providers: [ProviderEntry]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let path = pendingProvidersFile.path
        unlink(path)
        do {
            try KeyFiles.writePrivateFile(at: path, bytes: Array(try encoder.encode(providers)))
        } catch {
            throw CLIError.failed("\(path) cannot be written: \(error)")
        }
    }

    /// Puts a waiting provider list in place when its client secrets open with `storage`'s key
    /// (the store was sealed again under it). Otherwise the list is left, or removed when
    /// `discardingStale` (the rotation that wrote it failed before the store changed).
    func settlePendingProviders(with storage: any HomeStorage, discardingStale: Bool = false) throws {
        let path = pendingProvidersFile.path
        guard let data = FileManager.default.contents(atPath: path),
            let pending = try? JSONDecoder().decode([ProviderEntry].self, from: data)
        else {
            if discardingStale { unlink(path) }
            return
        }
        let opens = pending.allSatisfy { entry in
            ProviderEntry.sealedSecrets.allSatisfy { sealed in
                entry[keyPath: sealed.field].map {
                    storage.open(sealedSecret: $0, purpose: sealed.purpose(entry.name)) != nil
                } ?? true
            }
        }
        if opens {
            // Gone since it was read: another command (or the rotation itself) put it in place
            // first, and what it put there is this list.
            guard rename(path, providersFile.path) == 0 || errno == ENOENT else {
                throw CLIError.failed("\(path) cannot be put in place of \(providersFile.path).")
            }
            Self.logger?.notice("a key rotation cut short was finished: the provider list sealed anew is in place")
        } else if discardingStale {
            unlink(path)
        }
    }
}
