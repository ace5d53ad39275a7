public import Foundation
import HTTPTypes

/// What a protected resource's `401` or `403` asks for, from its `WWW-Authenticate` header: where
/// its metadata is (RFC 9728 §5.1, `resource_metadata`), which scope a request needs (RFC 6750
/// §3, `scope`) and the error (`invalid_token`, `insufficient_scope`).
public struct ResourceChallenge: Sendable, Hashable {
    /// The scheme of the challenge read (`bearer` or `dpop`, in lowercase).
    public var scheme: String
    /// The resource's protected resource metadata URL, when the challenge names one.
    public var resourceMetadata: URL?
    /// The scopes the challenge names (`scope`, space-separated), in its order.
    public var scopes: [String]
    /// The OAuth error the challenge carries, if any.
    public var error: OAuthErrorCode?

    /// The first Bearer or DPoP challenge of the header values, or `nil` when there is none.
    public init?(wwwAuthenticate values: [String]) {
        guard
            let challenge = AuthenticationChallenge.parse(values).first(where: {
                $0.scheme == "bearer" || $0.scheme == "dpop"
            })
        else { return nil }
        scheme = challenge.scheme
        resourceMetadata = challenge.parameters["resource_metadata"].flatMap { URL(string: $0) }
        scopes = (challenge.parameters["scope"] ?? "").split(separator: " ").map(String.init)
        error = challenge.error
    }

    /// Whether the challenge says the token lacks a scope the request needs (RFC 6750 §3.1):
    /// a new authorization for ``scopes`` may help, a refresh does not.
    public var isInsufficientScope: Bool { error == .insufficientScope }
}
