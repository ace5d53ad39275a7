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

    /// `request` with `Authorization: Bearer` and an access token valid for at least
    /// `minimumValidity` seconds (refreshed first when needed).
    public func authorized(_ request: HTTPRequest, minimumValidity: TimeInterval = 60) async throws(ProviderError)
        -> HTTPRequest
    {
        var request = request
        request.headerFields[.authorization] = "Bearer \(try await accessToken(minimumValidity: minimumValidity))"
        return request
    }

    #if canImport(FoundationNetworking) || canImport(Darwin)
        /// `request` with `Authorization: Bearer` and an access token valid for at least
        /// `minimumValidity` seconds (refreshed first when needed).
        public func authorized(_ request: URLRequest, minimumValidity: TimeInterval = 60) async throws(ProviderError)
            -> URLRequest
        {
            var request = request
            request.setValue(
                "Bearer \(try await accessToken(minimumValidity: minimumValidity))",
                forHTTPHeaderField: "Authorization")
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
        let token = try await accessToken()
        let first = try await Self.send(request, token: token, body: body, through: transport, options: options)
        guard AuthenticationChallenge.rejectsToken(first.response) else { return first }
        store.logger.debug("a resource server rejected the access token; refreshing", metadata: ["credential": "\(id)"])
        try await reject(accessToken: token)
        let fresh = try await accessToken()
        return try await Self.send(request, token: fresh, body: body, through: transport, options: options)
    }

    private static func send(
        _ request: HTTPRequest, token: String, body: Data?, through transport: any HTTPTransport,
        options: HTTPTransportOptions
    ) async throws(ProviderError) -> HTTPTransportResponse {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        do {
            return try await transport.send(request, body: body, options: options)
        } catch {
            throw ProviderError(
                error.kind == .cancelled ? .cancelled : .transport,
                reason: "The resource server could not be reached.", underlying: error)
        }
    }
}
