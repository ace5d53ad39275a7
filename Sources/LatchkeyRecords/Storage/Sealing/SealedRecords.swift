#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// What Latchkey's storage backends share about reading sealed records, written once: rows
/// opened one by one (a damaged one is reported and the others are read), the default-account
/// marker, and the end of an outbox claim.
package enum SealedRecords {
    /// Opens every row on its own with `open`. A row that `open` rejects, or whose columns do not
    /// decode (`open` throws), is reported as damaged under the id `id` reads from it.
    package static func open<Row, Value>(
        _ rows: [Row], kind: DamagedRecord.Kind, id: (Row) -> String?,
        _ open: (Row) throws -> Result<Value, DamagedRecord>
    ) -> (values: [Value], damaged: [DamagedRecord]) {
        var values: [Value] = []
        var damaged: [DamagedRecord] = []
        for row in rows {
            do {
                switch try open(row) {
                case .success(let value): values.append(value)
                case .failure(let record): damaged.append(record)
                }
            } catch {
                damaged.append(DamagedRecord(kind: kind, id: id(row) ?? "(no id)", reason: "its columns are not valid"))
            }
        }
        return (values, damaged)
    }
}

/// What the default-account marker says: nothing, an account, or a damaged marker.
package enum DefaultMarker: Sendable, Equatable {
    case none
    case some(CredentialID)
    case damaged

    /// The name a backend stores the marker under.
    package static let settingName = "default_credential"

    /// Reads a stored marker (`nil` when none is stored).
    package init(sealed: Data?, sealer: Sealer) {
        guard let sealed else {
            self = .none
            return
        }
        guard let id = sealer.open(sealed, context: SealContext.defaultMarker) else {
            self = .damaged
            return
        }
        self = .some(CredentialID(rawValue: String(decoding: id, as: UTF8.self)))
    }

    /// The sealed marker of `id`.
    package static func seal(_ id: CredentialID, with sealer: Sealer) throws(StorageError) -> Data {
        try sealer.seal(Data(id.rawValue.utf8), context: SealContext.defaultMarker)
    }

    /// The account it names: `nil` for none; a damaged marker is an error that says so.
    package func credentialID(path: String? = nil) throws(StorageError) -> CredentialID? {
        switch self {
        case .none: return nil
        case .some(let id): return id
        case .damaged:
            throw StorageError(
                .corruptRecord, path: path,
                reason:
                    "The default-account marker cannot be read (altered or damaged); choose the default again (latchkey use)."
            )
        }
    }

    /// The damaged-record report of a damaged marker.
    package static var damagedRecord: DamagedRecord {
        DamagedRecord(
            kind: .defaultMarker, id: settingName, reason: "it does not open with the store's key (altered or damaged)")
    }
}
