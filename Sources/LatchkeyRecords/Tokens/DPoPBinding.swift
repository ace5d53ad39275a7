/// The key a credential's tokens are bound to (RFC 9449, DPoP): the provider issued them to the
/// holder of that key, and takes them only with a proof the key signed.
///
/// The binding outlives its key: when the key is missing from the store or does not open, the
/// thumbprint still says the tokens are bound, so Latchkey reports that the account must sign in
/// again instead of sending a bound token as a bearer token.
public struct DPoPBinding: Sendable, Hashable, CustomStringConvertible {
    /// The key's JWK SHA-256 thumbprint (RFC 7638), as the provider's `cnf.jkt` names it.
    public let thumbprint: String
    /// The key, when the store still holds it.
    package let key: DPoPKey?

    /// A binding to `key`.
    package init(key: DPoPKey) {
        self.thumbprint = key.thumbprint
        self.key = key
    }

    /// A binding read from the store: the key only when it is one and has the thumbprint.
    package init(thumbprint: String, key: DPoPKey?) {
        self.thumbprint = thumbprint
        self.key = key?.thumbprint == thumbprint ? key : nil
    }

    /// Whether the key is there to sign proofs; without it the tokens cannot be used.
    public var isKeyAvailable: Bool { key != nil }

    /// The thumbprint, and whether the key is there; never the key.
    public var description: String { "DPoPBinding(jkt: \(thumbprint)\(isKeyAvailable ? "" : ", key missing"))" }
}
