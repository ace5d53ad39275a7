public import Crypto
import Foundation
import GRDB
public import Latchkey
public import Logging
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SQLiteCredentialStorage {
    /// Seals the whole store again under `newKey`: every credential, every outbox entry, the
    /// default marker and the key check, in one transaction, so the store is sealed with one key
    /// or the other, never half and half.
    ///
    /// With a key file, the new key is written first to `KEY.next` (mode 0600), the transaction
    /// commits, then `KEY.next` replaces the key file. If the process dies between the two, the
    /// next open finds the store sealed with the key in `KEY.next` and puts it in place. With a
    /// key held elsewhere (``KeySource/key(_:)``, ``KeySource/fileDescriptor(_:)``), keep
    /// `newKey` where the old one was once this returns.
    ///
    /// Refused while the store has damaged records (they would be lost for good: they cannot
    /// be opened to be sealed again). Other processes must not use the store meanwhile; they
    /// would see a wrong key until they open it again.
    public static func rotateKey(
        path: String, key: KeySource = .keyFileBesideDatabase, to newKey: SymmetricKey, logger: Logger? = nil
    ) async throws(StorageError) {
        guard newKey.bitCount == 256 else {
            throw StorageError(.invalidKeyFile, reason: "The new key is \(newKey.bitCount) bits; Latchkey needs 256.")
        }
        let storage = try await open(path: path, key: key, logger: logger)
        let damaged = try await storage.damagedRecords()
        guard damaged.isEmpty else {
            throw StorageError(
                .corruptRecord, path: storage.path,
                reason:
                    "The store has \(damaged.count) damaged record(s) (\(damaged.map(\.id).joined(separator: ", "))); sealing it with a new key would lose them for good. Remove or drop them first."
            )
        }
        let pending = storage.keyPath.map { $0 + ".next" }
        if let pending, let keyPath = storage.keyPath {
            unlink(pending)  // a leftover of an attempt that never committed
            let encoding: StoreFiles.KeyEncoding =
                (try? FileManager.default.attributesOfItem(atPath: keyPath)[.size] as? NSNumber)?.intValue
                    == StoreFiles.keyLength ? .raw : .base64
            try StoreFiles.createKeyFile(at: pending, key: newKey, encoding: encoding)
        }
        try await storage.reseal(with: Sealer(key: newKey))
        if let pending, let keyPath = storage.keyPath, rename(pending, keyPath) != 0 {
            throw StorageError(
                .fileNotAccessible, path: keyPath,
                reason:
                    "The store was sealed with the new key, which waits in \(pending); the key file could not be replaced. Opening the store puts it in place."
            )
        }
        try storage.close()
        (logger ?? .disabled("latchkey.sqlite")).debug("store sealed with a new key", metadata: ["path": "\(path)"])
    }

    /// Opens every sealed box with this storage's key and seals it with `next`'s, in one
    /// transaction.
    private func reseal(with next: Sealer) async throws(StorageError) {
        let current = sealer
        try await write { db in
            let (credentials, damagedCredentials) = try Self.readCredentials(
                db, CredentialRecord.all(), sealer: current)
            let (entries, damagedEntries) = try Self.readOutbox(db, sealer: current)
            guard damagedCredentials.isEmpty, damagedEntries.isEmpty else {
                throw StorageError(.corruptRecord, reason: "A record became unreadable during the key rotation.")
            }
            for credential in credentials { try CredentialRecord(credential, sealer: next).update(db) }
            for entry in entries { try OutboxRecord(entry, sealer: next).update(db) }
            if case .some(let id) = try Self.defaultMarker(db, sealer: current) {
                try db.execute(
                    sql: "UPDATE setting SET value = ? WHERE name = 'default_credential'",
                    arguments: [try next.seal(Data(id.rawValue.utf8), context: SealContext.defaultMarker)])
            }
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = 'key_check'",
                arguments: [try next.seal(Sealer.keyCheckPlaintext, context: Sealer.keyCheckContext)])
        }
    }

    /// Reads a key from an open file descriptor (32 bytes or their base64), to its end, and
    /// closes it: for a key a secret manager hands over through a pipe.
    public static func readKey(fromDescriptor number: Int32) throws(StorageError) -> SymmetricKey {
        let descriptor = FileDescriptor(rawValue: number)
        defer { try? descriptor.close() }
        return try StoreFiles.readKey(from: descriptor, name: "file descriptor \(number)")
    }

    /// Reads a key file (32 bytes or their base64) as Latchkey's stores trust one: a regular
    /// file, not a link, that belongs to the user and that no other user can read or write.
    /// For the key of a store kept elsewhere (PostgreSQL, say) that the caller holds in a file.
    ///
    /// - Throws: ``StorageError/Code/fileNotAccessible`` when there is no such file or it
    ///   cannot be read, ``StorageError/Code/insecureFile`` when others could read or replace
    ///   it, and ``StorageError/Code/invalidKeyFile`` when it does not hold a key.
    public static func readKey(fromFile path: String) throws(StorageError) -> SymmetricKey {
        guard let key = try StoreFiles.readKeyFile(at: path) else {
            throw StorageError(.fileNotAccessible, path: path, reason: "There is no key file there.")
        }
        return key
    }

    /// Seals a secret that lives outside the database (a client secret in a configuration
    /// file, say) with the store's key, bound to `purpose`: the text returned is base64.
    public func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try sealer.seal(secret: secret, purpose: purpose)
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for the same purpose; `nil` when it does not
    /// open (another key, another purpose, or altered).
    public func open(sealedSecret: String, purpose: String) -> String? {
        sealer.open(sealedSecret: sealedSecret, purpose: purpose)
    }
}
