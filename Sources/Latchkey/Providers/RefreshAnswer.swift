/// What a provider answered a refresh (``IdentityProvider/exchangeRefreshToken(of:)``): new
/// tokens, or an answer refused as a whole that still carried a new refresh token.
///
/// A provider that rotates refresh tokens spends the one it was sent as it answers. When its
/// answer cannot be used (it is malformed, or hands bearer tokens to a DPoP-bound credential),
/// the refresh token in it is the only live one, and the credential must keep it in place of the
/// one it sent, though nothing else of the answer is kept. That token is a value of the answer,
/// not a secret carried inside an error: its text and mirror never show it. A refusal without a
/// new refresh token is thrown as a ``ProviderError``.
public enum RefreshAnswer: Sendable, CustomStringConvertible, CustomReflectable {
    /// New tokens, merged over the refreshed ones; a new ID token in them is not verified yet.
    case token(Token)
    /// The answer was refused, for the reason `refusal` gives; `rotatedRefreshToken` is the
    /// refresh token it carried, to be kept.
    case refused(ProviderError, rotatedRefreshToken: String)

    /// The new tokens; the refusal, thrown, when the answer was refused.
    public func token() throws(ProviderError) -> Token {
        switch self {
        case .token(let token): return token
        case .refused(let refusal, _): throw refusal
        }
    }

    public var description: String {
        switch self {
        case .token(let token): "RefreshAnswer.token(\(token))"
        case .refused(let refusal, _): "RefreshAnswer.refused(\(refusal), rotated refresh token withheld)"
        }
    }

    public var customMirror: Mirror { Mirror(self, children: []) }
}
