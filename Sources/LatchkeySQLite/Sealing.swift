import Crypto
import Foundation
import Latchkey

/// AES-GCM sealing of the secret parts of stored records.
///
/// Each sealed box is bound to the record it belongs to through the associated data, so a
/// sealed token copied into another row does not open there.
struct Sealer: Sendable {
    let key: SymmetricKey

    /// Seals `plaintext` for the record named by `context`.
    func seal(_ plaintext: Data, context: String) throws(StorageError) -> Data {
        do {
            guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: Data(context.utf8)).combined
            else {
                throw StorageError(.databaseFailure, reason: "AES-GCM produced no combined box.")
            }
            return combined
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.databaseFailure, reason: "A record could not be sealed.", underlying: error)
        }
    }

    /// Opens a box sealed for `context`; `nil` when the key or the context is not the one it was
    /// sealed with, or the box was altered.
    func open(_ sealed: Data, context: String) -> Data? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return nil }
        return try? AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
    }

    /// The known value whose sealed form tells, on opening, whether a key is the store's key.
    static let keyCheckPlaintext = Data("latchkey key check v1".utf8)
    static let keyCheckContext = "latchkey.key-check"
}
