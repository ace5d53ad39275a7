/// Where the processes that share a store share the nonces servers give for DPoP proofs
/// (RFC 9449 §8 for a provider, §9 for a resource server): one process's answer tells every
/// other which nonce the server wants next, so they are not all challenged in turn.
///
/// A nonce is the server's, sent in the clear; it is kept in the clear. Every shipped backend
/// implements it; a store whose storage does not keeps nonces in its own process.
///
/// Servers are named by whoever sends requests — a remote through `latchkey agent` among them —
/// so a storage keeps the nonces of at most ``DPoPNonceLimit/servers`` servers: recording one
/// more forgets the one recorded longest ago (its next proof is challenged once, nothing else).
public protocol DPoPNonceStorage: Sendable {
    /// The nonce last recorded for `server` (a provider's issuer, client and origin, or a
    /// resource server's origin), or `nil`.
    func dpopNonce(for server: String) async throws(StorageError) -> String?

    /// Records `nonce` as the one `server` wants next, forgetting the server recorded longest
    /// ago when more than ``DPoPNonceLimit/servers`` would be kept.
    func setDPoPNonce(_ nonce: String, for server: String) async throws(StorageError)
}

/// How many servers' DPoP nonces a storage, or a process, keeps at most.
public enum DPoPNonceLimit {
    /// The servers (each one's nonce and its rotation note count apart) whose nonces are kept.
    public static let servers = 256
}
