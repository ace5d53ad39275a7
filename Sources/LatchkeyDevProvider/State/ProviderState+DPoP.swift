import Foundation

/// DPoP (RFC 9449): which proofs the provider takes, its nonces, and the proof ids it has seen.
extension ProviderState {
    /// Requires a nonce in every proof from now on, a new one after `rotation` accepted proofs
    /// (`nil`: no nonce required).
    func requireDPoPNonces(rotatingAfter rotation: Int?) {
        dpopNonceRotation = rotation.map { max($0, 1) }
        dpopNonceUses = 0
    }

    /// Answers the next `count` proofs with a new nonce, as if theirs had just gone stale.
    func forceDPoPNonceChallenges(_ count: Int) { dpopChallengesToForce = max(count, 0) }

    /// The nonce to send beside an answer, when nonces are required.
    var currentDPoPNonce: String? { dpopNonceRotation == nil ? nil : dpopNonce }

    /// Accepts a checked proof: its `jti` was never seen within the window, and it carries the
    /// current nonce when one is required. Returns the proof's key thumbprint.
    func accept(_ proof: DPoPCheck.Proof, window: TimeInterval) throws(DPoPRefusal) -> String {
        let date = now()
        seenProofIDs = seenProofIDs.filter { date.timeIntervalSince($0.value) <= 2 * window }
        guard seenProofIDs[proof.id] == nil else { throw DPoPRefusal("The DPoP proof's jti was used before.") }
        if let rotation = dpopNonceRotation {
            if dpopChallengesToForce > 0 {
                dpopChallengesToForce -= 1
                dpopNonce = Self.randomToken(bytes: 12)
                dpopNonceUses = 0
                throw DPoPRefusal("The DPoP nonce has changed.", nonce: dpopNonce)
            }
            guard proof.nonce == dpopNonce else {
                throw DPoPRefusal("The DPoP proof lacks the current nonce.", nonce: dpopNonce)
            }
            dpopNonceUses += 1
            if dpopNonceUses >= rotation {
                dpopNonce = Self.randomToken(bytes: 12)
                dpopNonceUses = 0
            }
        }
        seenProofIDs[proof.id] = date
        return proof.thumbprint
    }

    /// The thumbprint of the key `accessToken` is bound to, when it is.
    func binding(of accessToken: String) -> String? {
        guard case .access(_, let record) = lookup(accessToken) else { return nil }
        return grants[record.grantID]?.jkt
    }
}
