public import Foundation
public import HTTPTypes

/// What a server's answer to a request that carried an access token means for that request,
/// as a pure value: the one decision every sender of tokens makes — ``Credential/send(_:body:resource:scopes:through:options:)``,
/// its DPoP proofs, and the command line's requests through `latchkey agent`.
///
/// - ``nonceRequired(_:)``: the proof wants the server's newest nonce (RFC 9449 §8 and §9): a
///   resource's 401 whose `DPoP` challenge says `use_dpop_nonce`, or a token endpoint's 400
///   with that error, with a `DPoP-Nonce` to try. Sent again with it, a few times at most.
/// - ``tokenRejected``: the token is not valid (RFC 6750 §3.1): a 401 whose `Bearer` or `DPoP`
///   challenge says `invalid_token`, or carries no error (a token was sent, and not taken). A
///   refresh may help: the token is marked rejected, and the request sent once more.
/// - ``final``: anything else — a success, `insufficient_scope`, another status — is the answer.
public enum ResourceAnswer: Sendable, Hashable {
    /// Send again with this nonce in the proof.
    case nonceRequired(String)
    /// The token was refused: refresh once, and send again.
    case tokenRejected
    /// The answer stands.
    case final

    /// What `response` (with `body`, read for a token endpoint's error) means.
    public static func of(_ response: HTTPResponse, body: Data? = nil) -> ResourceAnswer {
        let nonce = response.headerFields[.dpopNonce]
        switch response.status.code {
        case 400:
            guard let nonce, let body,
                ProviderWire.object(body)?["error"]?.stringValue == OAuthErrorCode.useDPoPNonce.rawValue
            else { return .final }
            return .nonceRequired(nonce)
        case 401:
            let challenges = AuthenticationChallenge.parse(response.headerFields[values: .wwwAuthenticate])
                .filter { $0.scheme == "bearer" || $0.scheme == "dpop" }
            if challenges.contains(where: { $0.scheme == "dpop" && $0.error == .useDPoPNonce }) {
                // A nonce refusal without a nonce to try is final: sending again cannot help.
                return nonce.map(ResourceAnswer.nonceRequired) ?? .final
            }
            let rejected = challenges.isEmpty || challenges.contains { $0.error == nil || $0.error == .invalidToken }
            return rejected ? .tokenRejected : .final
        default:
            return .final
        }
    }
}
