import ArgumentParser
import Crypto
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP
import LatchkeyPostgres
import LatchkeySQLite
import Logging
import NIOConcurrencyHelpers
import SystemPackage

extension Home {
    // MARK: Providers

    /// The configured providers, their client secrets still sealed: from `providers.json` in the
    /// home, or from the PostgreSQL store, where every instance sees the same list.
    func providers() async throws -> [ProviderEntry] {
        let data: Data
        let source: String
        if databaseURL != nil {
            source = "The PostgreSQL store's provider list"
            do {
                guard let stored = try await PostgresStores.shared.storage(for: self).document(named: "providers")
                else { return [] }
                data = stored
            } catch let error as StorageError {
                throw CLIError.failed("The provider list cannot be read: \(error)")
            }
        } else {
            source = providersFile.path
            // A key rotation cut short is settled first: opening the store does that.
            if hasPendingProviders { _ = try? await openSQLiteStorage() }
            guard let file = try location.readProvidersFile() else { return [] }
            data = file
        }
        do {
            return try JSONDecoder().decode([ProviderEntry].self, from: data)
        } catch {
            throw CLIError.input("\(source) cannot be read: it is not a Latchkey provider list.")
        }
    }

    /// Writes the provider list. In the home: to a new file created 0600 (never wider, even for
    /// a moment), then renamed over the old one, so a crash leaves the old list or the new one.
    /// In a PostgreSQL store: in one statement.
    func saveProviders(_ providers: [ProviderEntry]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(providers)
        if databaseURL != nil {
            do {
                try await PostgresStores.shared.storage(for: self).setDocument(data, named: "providers")
            } catch let error as StorageError {
                throw CLIError.failed("The provider list cannot be written: \(error)")
            }
            return
        }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = providersFile.path + ".\(UUID().uuidString).tmp"
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(temporary), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: .ownerReadWrite)
            defer { try? descriptor.close() }
            _ = try descriptor.writeAll(data)
        } catch {
            unlink(temporary)
            throw CLIError.failed("\(providersFile.path) cannot be written: \(error)")
        }
        guard rename(temporary, providersFile.path) == 0 else {
            unlink(temporary)
            throw CLIError.failed("\(providersFile.path) cannot be written.")
        }
    }

    /// The provider named `name`, or the only one when `name` is nil.
    func provider(named name: String?) async throws -> ProviderEntry {
        let all = try await providers()
        if let name {
            guard let entry = all.first(where: { $0.name == name }) else {
                throw CLIError.input("No provider is named \(name); see `latchkey provider list`.")
            }
            return entry
        }
        guard all.count == 1, let only = all.first else {
            throw CLIError.input(
                all.isEmpty
                    ? "No provider is configured; add one with `latchkey provider add`."
                    : "Several providers are configured; choose one with --provider.")
        }
        return only
    }
}
