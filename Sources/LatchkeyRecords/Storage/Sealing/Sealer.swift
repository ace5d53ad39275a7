package import Crypto

#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// AES-GCM sealing of the secret parts of stored records, for Latchkey's storage backends.
///
/// Each sealed box is bound to the record it belongs to through the associated data, so a
/// sealed token copied into another row does not open there.
package struct Sealer: Sendable {
    package let key: SymmetricKey

    package init(key: SymmetricKey) {
        self.key = key
    }

    /// Seals a secret that lives outside the store (a client secret in a configuration file,
    /// say) for `purpose`, as base64 text.
    package func seal(secret: String, purpose: String) throws(StorageError) -> String {
        try seal(Data(secret.utf8), context: "latchkey.secret:\(purpose)").base64EncodedString()
    }

    /// Opens what ``seal(secret:purpose:)`` sealed for the same purpose; `nil` when it does not
    /// open (another key, another purpose, or altered).
    package func open(sealedSecret: String, purpose: String) -> String? {
        guard let data = Data(base64Encoded: sealedSecret),
            let plaintext = open(data, context: "latchkey.secret:\(purpose)")
        else { return nil }
        return String(decoding: plaintext, as: UTF8.self)
    }

    /// Seals `plaintext` for the record named by `context`.
    package func seal(_ plaintext: Data, context: String) throws(StorageError) -> Data {
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
    package func open(_ sealed: Data, context: String) -> Data? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return nil }
        return try? AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
    }

    /// The known value whose sealed form tells, on opening, whether a key is the store's key.
    package static let keyCheckPlaintext = Data("latchkey key check v1".utf8)
    package static let keyCheckContext = "latchkey.key-check"
}

/// What each sealed box is bound to: its AES-GCM associated data. Everything that routes a token
/// or names its account is in there, so an edited row does not open (and is reported as damaged)
/// instead of handing one account's token to another.
package enum SealContext {
    /// A credential's tokens are bound to its id, to its metadata exactly as stored (subject,
    /// username, email, name, issuer, client, tags), to what Latchkey knows against it
    /// (``CredentialState``) when anything is, and to the record's version, so that an older copy
    /// of the sealed tokens put back under the current version does not open. `version` is `nil`
    /// only for records sealed before it was bound (read once, by the schema upgrade).
    package static func credential(
        _ id: String, metadata: String, state: CredentialState = CredentialState(), version: Int? = nil
    ) -> String {
        var context = "latchkey.credential:\(id)\n\(metadata)"
        if !state.isClear {
            context += "\nstate:\(state.needsSignIn ? 1 : 0):\(state.rejectedAccessToken ?? "")"
        }
        if let version { context += "\nversion:\(version)" }
        return context
    }

    /// An outbox entry's token is bound to its id, provider and kind.
    package static func outbox(_ id: String, issuer: String, clientID: String, kind: String) -> String {
        "latchkey.outbox:\(id)\n\(issuer)\n\(clientID)\n\(kind)"
    }

    /// A provider's published document (metadata, key set) is bound to its key.
    package static func providerDocument(_ key: String) -> String { "latchkey.provider-document:\(key)" }

    /// The default-account marker is sealed on its own.
    package static let defaultMarker = "latchkey.default"

    /// Before the SQLite schema's version 4, only the ids were bound.
    package static func pendingSignIn(_ handle: String) -> String { "latchkey.web-sign-in:\(handle)" }
    package static func legacyCredential(_ id: String) -> String { "latchkey.credential:\(id)" }
    package static func legacyOutbox(_ id: String) -> String { "latchkey.outbox:\(id)" }
}
