public import Foundation
public import HTTPTypes

/// What sends requests to resource servers with an account's access token (and its DPoP
/// proofs): a ``Credential``, or a stand-in for a credential held elsewhere (the command line's
/// `latchkey agent`). Whichever sends, what an answer means is ``ResourceAnswer``'s to say, so
/// a program written over this protocol (`LatchkeyMCP`'s proxy) behaves the same over either.
public protocol AuthorizedRequestSender: Sendable {
    /// Sends `request` with a token for `resource` and `scopes` (the account's own when both
    /// are `nil`) through `transport`: once more after the server refused the token (a new one
    /// replaces it), and again with the server's nonce when a proof wants one.
    ///
    /// - Throws: ``ProviderError``: ``ProviderError/Code/signInRequired`` when the account must
    ///   sign in again, ``ProviderError/Code/transport`` when the server cannot be reached.
    func send(
        _ request: HTTPRequest, body: Data?, resource: URL?, scopes: [String]?, through transport: any HTTPTransport,
        options: HTTPTransportOptions
    ) async throws(ProviderError) -> HTTPTransportResponse

    /// Whether a request held open for long (an event stream) would hold up every other sender
    /// of the account: a credential whose tokens are bound (DPoP) sends its nonce retries in
    /// turn with the other processes sharing its store.
    func sendsInTurn() async -> Bool
}

extension Credential: AuthorizedRequestSender {
    /// Whether the tokens are bound (DPoP): nonce retries then take turns under the lease.
    public func sendsInTurn() async -> Bool {
        (try? await stored().token.dpop) != nil
    }
}
