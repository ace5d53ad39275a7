public import Crypto
import Foundation
import GRDB
public import Latchkey
import LatchkeySQLiteReader
public import Logging
import NIOConcurrencyHelpers
import SystemPackage

extension SQLiteCredentialStorage {
    /// Seals the whole store again under `newKey`: every credential, every outbox entry, the
    /// default marker and the key check, in one transaction, so the store is sealed with one key
    /// or the other, never half and half.
    ///
    /// Other processes may go on using the store: the rotation holds the whole store's lease,
    /// so no credential changes meanwhile (a refresh under way finishes first, within
    /// `timeout`, and the next one waits), and every process that holds the old key reads the new
    /// one from the key file at its next read or write.
    ///
    /// With a key file, the new key is written first to `KEY.next` (mode 0600), the transaction
    /// commits, then `KEY.next` replaces the key file. If the process dies between the two, the
    /// next open (or another process's next read) finds the store sealed with the key in
    /// `KEY.next` and uses it. With a key held elsewhere (``KeySource/key(_:)``,
    /// ``KeySource/fileDescriptor(_:)``), keep `newKey` where the old one was once this returns;
    /// processes holding the old key must open the store again.
    ///
    /// Refused while the store has damaged records (they would be lost for good: they cannot
    /// be opened to be sealed again).
    public static func rotateKey(
        path: String, key: KeySource = .keyFileBesideDatabase, to newKey: SymmetricKey, logger: Logger? = nil,
        timeout: Duration = .seconds(60)
    ) async throws(StorageError) {
        guard newKey.bitCount == 256 else {
            throw StorageError(.invalidKeyFile, reason: "The new key is \(newKey.bitCount) bits; Latchkey needs 256.")
        }
        let storage = try await open(path: path, key: key, logger: logger)
        let damaged = try await storage.damagedRecords() + storage.damagedOutboxEntries()
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
            let encoding: KeyFiles.KeyEncoding =
                (try? FileManager.default.attributesOfItem(atPath: keyPath)[.size] as? NSNumber)?.intValue
                    == KeyFiles.keyLength ? .raw : .base64
            try KeyFiles.writeNewKeyFile(at: pending, key: newKey, encoding: encoding)
        }
        let next = Sealer(key: newKey)
        do {
            let newCheck = try await storage.withWholeStore(terms: LeaseTerms(duration: timeout), timeout: timeout) {
                db, current in try Self.reseal(db, from: current, to: next)
            }
            storage.keys.withLockedValue { $0 = StoreKeys(sealer: next, check: newCheck) }
        } catch {
            if let pending { unlink(pending) }
            throw error
        }
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

    /// Opens every sealed box with `current` and seals it with `next`, in the transaction of
    /// `db`; returns the new key check.
    private static func reseal(_ db: Database, from current: Sealer, to next: Sealer) throws -> Data {
        let credentials = try readCredentials(db, SealedCredential.selectRecorded, sealer: current)
        let entries = try readOutbox(db, "SELECT \(SQL.list(SealedOutboxEntry.columns)) FROM outbox", sealer: current)
        guard credentials.damaged.isEmpty, entries.damaged.isEmpty else {
            throw StorageError(.corruptRecord, reason: "A record became unreadable during the key rotation.")
        }
        for credential in credentials.values { try SealedCredential(credential, sealer: next).replace(in: db) }
        for entry in entries.values { try SealedOutboxEntry(entry, sealer: next).replace(in: db) }
        for row in try Row.fetchAll(db, sql: "SELECT id, version, deleted, seal FROM credential_version") {
            let record = CredentialVersionRecord(
                id: try row.decode(forColumn: "id"), version: try row.decode(forColumn: "version"),
                deleted: try row.decode(forColumn: "deleted"), seal: try row.decode(forColumn: "seal"))
            try record.resealed(from: current, to: next)?.write(in: db)
        }
        if case .some(let id) = try defaultMarker(db, sealer: current) {
            try db.execute(
                sql: "UPDATE setting SET value = ? WHERE name = ?",
                arguments: [try DefaultMarker.seal(id, with: next), DefaultMarker.settingName])
        }
        let check = try next.seal(Sealer.keyCheckPlaintext, context: Sealer.keyCheckContext)
        try db.execute(sql: "UPDATE setting SET value = ? WHERE name = 'key_check'", arguments: [check])
        return check
    }

    /// Seals a secret that lives outside the database (a client secret in the command-line
    /// tool's provider list) with the store's key, bound to `purpose`: the text returned is base64.
    package func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try keys.withLockedValue { $0.sealer }.seal(secret: secret, purpose: purpose)
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for the same purpose; `nil` when it does not
    /// open (another key, another purpose, or altered).
    package func open(sealedSecret: String, purpose: String) -> String? {
        keys.withLockedValue { $0.sealer }.open(sealedSecret: sealedSecret, purpose: purpose)
    }
}
