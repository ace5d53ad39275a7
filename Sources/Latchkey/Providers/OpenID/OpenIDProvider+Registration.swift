public import Foundation
import HTTPTypes
public import Logging

extension OpenIDProvider {
    /// Registers a new client at the provider `issuer` names (RFC 7591 dynamic client
    /// registration), through the `registration_endpoint` its metadata advertises.
    ///
    /// ```swift
    /// let client = try await OpenIDProvider.register(
    ///     ClientRegistrationRequest(clientName: "my tool", redirectURIs: [loopback]),
    ///     issuer: issuer, transport: transport)
    /// let provider = OpenIDProvider(
    ///     configuration: OpenIDProviderConfiguration(
    ///         issuer: issuer, clientID: client.clientID, authentication: client.authentication),
    ///     transport: transport)
    /// ```
    ///
    /// - Parameter initialAccessToken: the token a provider that does not register anyone asks
    ///   for (RFC 7591 §3.1), sent as a bearer token.
    /// - Throws: ``ProviderError`` with ``ProviderError/Code/missingEndpoint`` when the provider
    ///   offers no registration, or its refusal (`invalid_redirect_uri`,
    ///   `invalid_client_metadata`, RFC 7591 §3.2.2).
    public static func register(
        _ request: ClientRegistrationRequest, issuer: URL, initialAccessToken: String? = nil,
        transport: any HTTPTransport, logger: Logger? = nil
    ) async throws(ProviderError) -> RegisteredClient {
        let discovery = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: ""), transport: transport,
            logger: logger)
        let url: URL
        do {
            url = try await discovery.endpoint(.registration)
        } catch  where error.code == .missingEndpoint {
            throw ProviderError(
                .missingEndpoint, endpoint: .registration,
                reason: "The provider offers no client registration (no registration_endpoint in its metadata).")
        }
        var headers: [HTTPField.Name: String] = [:]
        if let initialAccessToken { headers[.authorization] = "Bearer \(initialAccessToken)" }
        let answer = try await discovery.wire.json(
            .json(
                .registration, url, request.document, headers: headers,
                secrets: [initialAccessToken].compactMap { $0 }))
        let client = try RegisteredClient(answer: answer)
        discovery.logger.debug(
            "client registered",
            metadata: ["client_id": "\(client.clientID)", "method": "\(client.authenticationMethod)"])
        return client
    }

    /// Deletes a client ``register(_:issuer:initialAccessToken:transport:logger:)`` registered
    /// (RFC 7592 §2.3): a `DELETE` to its ``RegisteredClient/registrationClientURI`` with its
    /// ``RegisteredClient/registrationAccessToken``. Once it returns, the provider has forgotten
    /// the client (and, as the RFC advises, the tokens it was issued).
    ///
    /// - Throws: ``ProviderError`` with ``ProviderError/Code/missingEndpoint`` when the provider
    ///   gave the client no registration access token or no registration client URI to manage it
    ///   with; ``ProviderError/Code/unsupported`` when it does not delete clients (`405`, §2.3);
    ///   its refusal otherwise (`401`: the token is not valid, or the client is gone already).
    public static func unregister(
        _ client: RegisteredClient, transport: any HTTPTransport, logger: Logger? = nil
    ) async throws(ProviderError) {
        guard let uri = client.registrationClientURI, let token = client.registrationAccessToken, !token.isEmpty
        else {
            throw ProviderError(
                .missingEndpoint, endpoint: .registration,
                reason:
                    "The provider gave the client no registration access token and client URI (RFC 7592), so it cannot be deleted from here."
            )
        }
        let manager = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: uri, clientID: client.clientID), transport: transport,
            logger: logger)
        var http = try HTTPRequest.checked(.delete, uri, endpoint: .registration)
        http.headerFields[.authorization] = "Bearer \(token)"
        let answer = try await manager.wire.send(ProviderRequest(.registration, http, secrets: [token]))
        guard answer.response.status.code != 405 else {
            throw ProviderError(
                .unsupported, endpoint: .registration,
                reason: "The provider does not delete registered clients (405 to DELETE, RFC 7592 §2.3).",
                status: 405)
        }
        guard (200..<300).contains(answer.response.status.code) else {
            throw manager.wire.refusal(
                ProviderRequest(.registration, http, secrets: [token]), answer, manager.wire.clock.date)
        }
        manager.logger.debug("client deleted", metadata: ["client_id": "\(client.clientID)"])
    }
}
