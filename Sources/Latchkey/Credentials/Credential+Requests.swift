import Crypto
public import Foundation
public import HTTPTypes
import Logging

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Putting the credential's access token on the requests an application sends to its resource
/// servers, as Okta's `authorize(request:)` and Auth0's `credentials(minTTL:)` do.
extension Credential {
    /// Marks `accessToken` as rejected by a resource server (a 401 with `invalid_token`, or
    /// git's `erase`): the next ``accessToken(minimumValidity:)`` refreshes, once, for every
    /// caller and process that shares the store. Nothing happens when the stored access token is
    /// another one already (someone refreshed meanwhile).
    public func reject(accessToken: String) async throws(ProviderError) {
        let fingerprint = StoredCredential.fingerprint(accessToken)
        _ = try await transaction { transaction async throws(StorageError) in
            try await transaction.update { credential in
                guard credential.token.accessToken == accessToken else { return }
                credential.state.rejectedAccessToken = fingerprint
            }
        }
    }

    /// `request` with an access token valid for at least `minimumValidity` seconds (refreshed
    /// first when needed): `Authorization: Bearer`, or for tokens bound to the account's key
    /// `Authorization: DPoP` and a `DPoP` proof for this method and URL (RFC 9449 §7), with the
    /// server's nonce when it gave one.
    ///
    /// - Throws: ``ProviderError/Code/dpopKeyUnavailable`` when the tokens are bound to a key
    ///   the store no longer holds.
    public func authorized(_ request: HTTPRequest, minimumValidity: TimeInterval = 60) async throws(ProviderError)
        -> HTTPRequest
    {
        let (token, accessToken) = try await usableToken(minimumValidity: minimumValidity)
        return try await authorize(request, token: token, accessToken: accessToken)
    }

    #if canImport(FoundationNetworking) || canImport(Darwin)
        /// `request` with an access token valid for at least `minimumValidity` seconds
        /// (refreshed first when needed), as ``authorized(_:minimumValidity:)-(HTTPRequest,_)``
        /// puts it on: bearer, or DPoP with a proof.
        public func authorized(_ request: URLRequest, minimumValidity: TimeInterval = 60) async throws(ProviderError)
            -> URLRequest
        {
            let (token, accessToken) = try await usableToken(minimumValidity: minimumValidity)
            guard let url = request.url, let signing = try signing(token, accessToken: accessToken) else {
                var request = request
                request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
                return request
            }
            let method = HTTPRequest.Method(request.httpMethod ?? "GET") ?? .get
            let proved = try await signing.prove(HTTPRequest(method: method, url: url))
            var request = request
            for field in proved.headerFields { request.setValue(field.value, forHTTPHeaderField: field.name.rawName) }
            return request
        }
    #endif

    /// Sends `request` to a resource server with a fresh access token, through `transport`.
    ///
    /// When the server answers that the token is not valid — a 401 whose `Bearer` challenge says
    /// `error="invalid_token"` (RFC 6750 §3.1) or names no error at all — the token is marked
    /// rejected, refreshed once (one refresh for every caller, in this process and every process
    /// sharing the store) and the request sent once more. The body is held in memory, so the
    /// second send carries it unchanged; a streamed body, which could not be sent twice, is not
    /// something this helper takes. Any other answer, a 401 naming another error included
    /// (`insufficient_scope`), is returned as it is.
    ///
    /// - Throws: the refresh's ``ProviderError`` (``ProviderError/Code/signInRequired`` when
    ///   the account must sign in again), or ``ProviderError/Code/transport`` when the server
    ///   cannot be reached.
    public func send(
        _ request: HTTPRequest, body: Data? = nil, through transport: any HTTPTransport,
        options: HTTPTransportOptions = HTTPTransportOptions()
    ) async throws(ProviderError) -> HTTPTransportResponse {
        let (token, accessToken) = try await usableToken()
        let first = try await send(
            request, token: token, accessToken: accessToken, body: body, through: transport, options: options)
        guard AuthenticationChallenge.rejectsToken(first.response) else { return first }
        store.logger.debug("a resource server rejected the access token; refreshing", metadata: ["credential": "\(id)"])
        try await reject(accessToken: accessToken)
        let fresh = try await usableToken()
        return try await send(
            request, token: fresh.token, accessToken: fresh.accessToken, body: body, through: transport,
            options: options)
    }

    /// Sends `request` with `accessToken` on it; a DPoP-bound token answers the server's nonce
    /// challenge once.
    private func send(
        _ request: HTTPRequest, token: Token, accessToken: String, body: Data?, through transport: any HTTPTransport,
        options: HTTPTransportOptions
    ) async throws(ProviderError) -> HTTPTransportResponse {
        @Sendable func transmit(_ request: HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse {
            do {
                return try await transport.send(request, body: body, options: options)
            } catch {
                throw ProviderError(
                    error.kind == .cancelled ? .cancelled : .transport,
                    reason: "The resource server could not be reached.", underlying: error)
            }
        }
        guard let signing = try signing(token, accessToken: accessToken) else {
            return try await transmit(try await authorize(request, token: token, accessToken: accessToken))
        }
        return try await signing.send(request, transmit)
    }

    /// `request` carrying `accessToken`: as DPoP with a proof when `token` is bound, else as a
    /// bearer token.
    private func authorize(_ request: HTTPRequest, token: Token, accessToken: String) async throws(ProviderError)
        -> HTTPRequest
    {
        if let signing = try signing(token, accessToken: accessToken) { return try await signing.prove(request) }
        var request = request
        request.headerFields[.authorization] = "Bearer \(accessToken)"
        return request
    }

    /// The proofs for a resource request with `accessToken`, when the access token is bound to
    /// the account's key (its type is `DPoP`).
    private func signing(_ token: Token, accessToken: String) throws(ProviderError) -> DPoPSigning? {
        guard let binding = token.dpop, token.tokenType.lowercased() == "dpop" else { return nil }
        guard let key = binding.key else { throw .dpopKeyUnavailable }
        return DPoPSigning(key: key, accessToken: accessToken, nonces: store.dpopNonces, clock: store.clock)
    }
}
