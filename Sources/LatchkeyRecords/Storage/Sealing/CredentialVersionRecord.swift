#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// What a store last wrote of a credential, kept beside its row and written in the same
/// transaction: its version, or that it was deleted at that version.
///
/// A credential's seal binds its version, so an older copy of its sealed tokens does not open
/// under the current row; but a whole older row (version 1 put back over version 3) opens as
/// itself. The record is what tells: a row whose version is not the one recorded, or that was
/// recorded as deleted, is a copy put back, and is reported as damaged, never used. The record
/// is sealed (an empty box bound to its fields), so it cannot be written lower without the
/// store's key; a copy of the whole file taken earlier still reads as that earlier store, which
/// only something kept outside the file could tell.
package struct CredentialVersionRecord: Sendable, Hashable {
    package var id: String
    package var version: Int
    package var deleted: Bool
    package var seal: Data

    /// A record as stored.
    package init(id: String, version: Int, deleted: Bool, seal: Data) {
        self.id = id
        self.version = version
        self.deleted = deleted
        self.seal = seal
    }

    /// A new record of the credential `id` at `version`, sealed with `sealer`.
    package init(id: String, version: Int, deleted: Bool = false, sealer: Sealer) throws(StorageError) {
        self.init(
            id: id, version: version, deleted: deleted,
            seal: try sealer.seal(Data(), context: Self.context(id, version: version, deleted: deleted)))
    }

    /// Why a row of the credential at `version` is not the one this store wrote; `nil` when it is.
    /// `record` is `nil` when the store has none for the row's id.
    package static func damage(ofRowAt version: Int, id: String, record: Self?, sealer: Sealer) -> String? {
        guard let record else {
            return "the store has no record of writing it (a row copied in from elsewhere, or its record removed)"
        }
        guard record.id == id, record.opens(with: sealer) else { return "the record of its version is altered" }
        if record.deleted {
            return "it was deleted at version \(record.version); an older copy of it was put back"
        }
        guard record.version == version else {
            return version < record.version
                ? "it is version \(version), the store last wrote version \(record.version): an older copy was put back"
                : "it is version \(version), past the store's record of version \(record.version) (altered)"
        }
        return nil
    }

    /// Whether the record is one a store with `sealer`'s key wrote.
    package func opens(with sealer: Sealer) -> Bool {
        sealer.open(seal, context: Self.context(id, version: version, deleted: deleted)) != nil
    }

    /// The record sealed with `next` (a key rotation); `nil` when it does not open with `current`
    /// (it stays as it is, and the row it records reads as damaged).
    package func resealed(from current: Sealer, to next: Sealer) throws(StorageError) -> Self? {
        guard opens(with: current) else { return nil }
        return try Self(id: id, version: version, deleted: deleted, sealer: next)
    }

    private static func context(_ id: String, version: Int, deleted: Bool) -> String {
        "latchkey.credential-version:\(id)\nversion:\(version)\(deleted ? "\ndeleted" : "")"
    }
}

extension SealedCredential {
    /// The credential, or why the record cannot be read: as ``open(with:versionBound:)``, and
    /// damaged as well when the row is not the version the store recorded (`record`, `nil` when
    /// there is none): an older row put back.
    package func open(with sealer: Sealer, recorded record: CredentialVersionRecord?) -> Result<
        StoredCredential, DamagedRecord
    > {
        if let damage = CredentialVersionRecord.damage(ofRowAt: version, id: id, record: record, sealer: sealer) {
            return .failure(DamagedRecord(kind: .credential, id: id, reason: damage))
        }
        return open(with: sealer)
    }
}
