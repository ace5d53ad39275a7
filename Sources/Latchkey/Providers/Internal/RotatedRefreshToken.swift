/// The refresh token an unusable refresh answer carried: the provider rotated it, so it is the
/// only live one, and it must be kept even though the rest of the answer is refused (a
/// `token_type` that is not a string, bearer tokens for a DPoP-bound credential).
///
/// It travels as the ``ProviderError/underlying`` error of the refusal from the provider to the
/// credential transaction, which stores it and takes it out of the error before anyone else
/// sees it. Its text and mirror never show the token.
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
}
