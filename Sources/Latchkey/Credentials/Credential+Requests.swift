import Crypto
public import Foundation
public import HTTPTypes
import Logging

/// Putting the credential's access token on the requests an application sends to its resource
/// servers, as Okta's `authorize(request:)` and Auth0's `credentials(minTTL:)` do.
extension Credential {
    /// Marks `accessToken` as rejected by a resource server (a 401 with `invalid_token`, or
    /// git's `erase`): the next ``accessToken(minimumValidity:)`` refreshes, once, for every
    /// caller and process that shares the store; a resource's token (``resourceToken(for:scopes:minimumValidity:)``)
    /// is dropped, and the next call for it gets a new one. Nothing happens when the stored token
    /// is another one already (someone refreshed meanwhile).
    public func reject(accessToken: String) async throws(ProviderError) {
        let fingerprint = StoredCredential.fingerprint(accessToken)
        _ = try await transaction { transaction async throws(StorageError) in
            try await transaction.update { credential in
                credential.token.resourceTokens = credential.token.resourceTokens.filter {
                    $0.value.accessToken != accessToken
                }
                guard credential.token.accessToken == accessToken else { return }
                credential.state.rejectedAccessToken = fingerprint
            }
        }
    }

    /// Keeps `nonce` as the one the resource server at `url` wants in its next DPoP proof (its
    /// `DPoP-Nonce` header, RFC 9449 §9), for every process sharing the store: for requests
    /// authorized here (``authorized(_:resource:scopes:minimumValidity:)``) and sent by another
    /// program, as `latchkey agent`'s callers send theirs.
    public func recordDPoPNonce(_ nonce: String, for url: URL) async {
        await store.dpopNonces.record(nonce, for: url)
    }

    /// `request` with an access token valid for at least `minimumValidity` seconds (refreshed
    /// first when needed): `Authorization: Bearer`, or for tokens bound to the account's key
    /// `Authorization: DPoP` and a `DPoP` proof for this method and URL (RFC 9449 §7), with the
    /// server's nonce when it gave one. With `resource`, the token is that resource's
    /// (``resourceToken(for:scopes:minimumValidity:)``).
    ///
    /// - Throws: ``ProviderError/Code/dpopKeyUnavailable`` when the tokens are bound to a key
    ///   the store no longer holds.
    public func authorized(
        _ request: HTTPRequest, resource: URL? = nil, scopes: [String]? = nil, minimumValidity: TimeInterval = 60
    ) async throws(ProviderError) -> HTTPRequest {
        try await presented(resource: resource, scopes: scopes, minimumValidity: minimumValidity).authorize(request)
    }

    /// Sends `request` to a resource server with a fresh access token (that `resource`'s, when
    /// given), through `transport`.
    ///
    /// When the server answers that the token is not valid — a 401 whose `Bearer` or `DPoP`
    /// challenge says `error="invalid_token"` (RFC 6750 §3.1) or names no error at all — the token
    /// is marked rejected, refreshed once (one refresh for every caller, in this process and
    /// every process sharing the store) and the request sent once more. A DPoP-bound token
    /// answers the server's nonce challenge once (RFC 9449 §9). The body is held in memory, so
    /// the second send carries it unchanged; a streamed body, which could not be sent twice, is
    /// not something this helper takes. Any other answer, a 401 naming another error included
    /// (`insufficient_scope`), is returned as it is.
    ///
    /// - Throws: the refresh's ``ProviderError`` (``ProviderError/Code/signInRequired`` when
    ///   the account must sign in again), or ``ProviderError/Code/transport`` when the server
    ///   cannot be reached.
    public func send(
        _ request: HTTPRequest, body: Data? = nil, resource: URL? = nil, scopes: [String]? = nil,
        through transport: any HTTPTransport, options: HTTPTransportOptions = HTTPTransportOptions()
    ) async throws(ProviderError) -> HTTPTransportResponse {
        @Sendable func transmit(_ request: HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse {
            // Retries sent under the credential's lease are answered within its deadline.
            var options = options
            if let deadline = RequestDeadline.current, let timeout = deadline.timeout(cutting: options.timeout) {
                options.timeout = timeout
            }
            do {
                return try await transport.send(request, body: body, options: options)
            } catch {
                throw ProviderError(
                    error.kind == .cancelled ? .cancelled : .transport,
                    reason: "The resource server could not be reached.", underlying: error)
            }
        }
        let first = try await presented(resource: resource, scopes: scopes, minimumValidity: 60)
        let answer = try await withNonceRetriesInTurn { () async throws(ProviderError) in
            try await first.send(request, transmit)
        }
        guard ResourceAnswer.of(answer.response) == .tokenRejected else { return answer }
        store.logger.debug("a resource server rejected the access token; refreshing", metadata: ["credential": "\(id)"])
        try await reject(accessToken: first.accessToken)
        let second = try await presented(resource: resource, scopes: scopes, minimumValidity: 60)
        return try await withNonceRetriesInTurn { () async throws(ProviderError) in
            try await second.send(request, transmit)
        }
    }

    /// Runs `body`, whose DPoP requests' retries after a nonce challenge run in the server's
    /// turn (``CredentialStore/nonceTurn(at:_:)``): the processes sharing the store retry one
    /// after another, each with the nonce the one before it left, instead of spending each
    /// other's (a server that rotates its nonce at every use has one for all of them). The turn
    /// is not the credential's lease: a retry never waits for a refresh.
    func withNonceRetriesInTurn<T: Sendable>(_ body: () async throws(ProviderError) -> T)
        async throws(ProviderError)
        -> T
    {
        let store = self.store
        let runner = DPoPSigning.RetryRunner { url, retries in
            do throws(StorageError) {
                return try await store.nonceTurn(at: url) { await retries() }
            } catch {
                return .failure(.storage(error))
            }
        }
        let result = await DPoPSigning.$retryRunner.withValue(runner) {
            () async -> Result<T, ProviderError> in
            do throws(ProviderError) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The access token a request carries, and the proofs that go with it when it is bound.
    package func presented(resource: URL?, scopes: [String]?, minimumValidity: TimeInterval) async throws(ProviderError)
        -> PresentedToken
    {
        let accessToken: String
        let tokenType: String
        let binding: DPoPBinding?
        if resource != nil || scopes != nil {
            let token = try await resourceToken(for: resource, scopes: scopes, minimumValidity: minimumValidity)
            (accessToken, tokenType, binding) = (token.accessToken, token.tokenType, try await stored().token.dpop)
        } else {
            let (token, value) = try await usableToken(minimumValidity: minimumValidity)
            (accessToken, tokenType, binding) = (value, token.tokenType, token.dpop)
        }
        guard let binding, tokenType.lowercased() == "dpop" else {
            return PresentedToken(accessToken: accessToken, signing: nil)
        }
        guard let key = binding.key else { throw .dpopKeyUnavailable }
        return PresentedToken(
            accessToken: accessToken,
            signing: DPoPSigning(
                key: key, accessToken: accessToken, nonces: store.dpopNonces, clock: store.clock, logger: store.logger))
    }
}

/// An access token as a request carries it: as a bearer token, or as DPoP with proofs.
package struct PresentedToken: Sendable {
    package var accessToken: String
    var signing: DPoPSigning?

    package func authorize(_ request: HTTPRequest) async throws(ProviderError) -> HTTPRequest {
        if let signing { return try await signing.prove(request) }
        var request = request
        request.headerFields[.authorization] = "Bearer \(accessToken)"
        return request
    }

    func send(
        _ request: HTTPRequest,
        _ transmit: @escaping @Sendable (HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> HTTPTransportResponse {
        guard let signing else { return try await transmit(try await authorize(request)) }
        return try await signing.send(request, transmit)
    }
}
