/// Where the processes that share a store share the nonces servers give for DPoP proofs
/// (RFC 9449 §8 for a provider, §9 for a resource server): one process's answer tells every
/// other which nonce the server wants next, so they are not all challenged in turn.
///
/// A nonce is the server's, sent in the clear; it is kept in the clear. Every shipped backend
/// implements it; a store whose storage does not keeps nonces in its own process.
public protocol DPoPNonceStorage: Sendable {
    /// The nonce last recorded for `server` (a provider's issuer, client and origin, or a
    /// resource server's origin), or `nil`.
    func dpopNonce(for server: String) async throws(StorageError) -> String?

    /// Records `nonce` as the one `server` wants next.
    func setDPoPNonce(_ nonce: String, for server: String) async throws(StorageError)
}
