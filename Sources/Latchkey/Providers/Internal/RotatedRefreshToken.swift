/// The refresh token an unusable refresh answer carried: the provider rotated it, so it is the
/// only live one, and it must be kept even though the rest of the answer is refused (a
/// `token_type` that is not a string, bearer tokens for a DPoP-bound credential).
///
/// Inside a provider it travels as the ``ProviderError/underlying`` error of the refusal, from
/// where the answer is read to the refresh that returns it: there it becomes a value,
/// ``RefreshAnswer/refused(_:rotatedRefreshToken:)`` (``answer(refusing:)``), taken out of the
/// error. Its text and mirror never show the token.
package struct RotatedRefreshToken: Error, Sendable, CustomStringConvertible, CustomReflectable {
    /// The rotated refresh token.
    package let value: String

    /// The refresh token of the fields of a refused refresh answer, when it holds one.
    package init?(in fields: [String: JSONValue]) {
        guard let value = fields["refresh_token"]?.stringValue, !value.isEmpty else { return nil }
        self.value = value
    }

    package var description: String { "the answer's refresh token (withheld)" }
    package var customMirror: Mirror { Mirror(self, children: []) }

    /// A refusal of a refresh answer, `reason` saying why, that carries the answer's rotated
    /// refresh token, if any, to the transaction that stores it.
    package static func refusal(
        _ code: ProviderError.Code, reason: String, fields: [String: JSONValue], underlying: (any Error & Sendable)?
    ) -> ProviderError {
        let rotated = RotatedRefreshToken(in: fields)
        return ProviderError(
            code, endpoint: .token,
            reason: reason + (rotated != nil ? " The refresh token it carried was kept." : ""),
            underlying: rotated ?? underlying)
    }

    /// The refresh answer `error` stands for when it carries a rotated refresh token: the
    /// refusal (without the token) and the token, apart; `nil` for any other error.
    package static func answer(refusing error: ProviderError) -> RefreshAnswer? {
        guard let rotated = error.underlying as? RotatedRefreshToken else { return nil }
        let refusal = ProviderError(
            error.code, endpoint: error.endpoint, reason: error.reason, oauthError: error.oauthError,
            errorDescription: error.errorDescription, status: error.status, retryAfter: error.retryAfter,
            underlying: nil)
        return .refused(refusal, rotatedRefreshToken: rotated.value)
    }
}
